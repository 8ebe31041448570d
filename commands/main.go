// Package commands holds decode's subcommands: flags, config, wiring and
// renderers. Each command is a file; Main maps errors to exit codes.
package commands

import (
	"cmp"
	"context"
	"decode/tools/sandbox"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
)

// Main runs decode with args (os.Args) and returns the exit code.
func Main(args []string, f *Factory) int {
	if len(args) > 1 && args[1] == sandbox.HelperArg {
		// decode re-executed as the sandbox helper of one command: nothing
		// else of the CLI runs.
		return sandbox.HelperMain(args[2:])
	}
	// stdout and stderr are exits like any other: everything printed goes
	// through the redactor, whole lines at a time.
	rawOut, rawErr := f.IO.Out, f.IO.Err
	out, errw := f.redactor().Writer(rawOut), f.redactor().Writer(rawErr)
	f.IO.Out, f.IO.Err = out, errw
	f.Unredacted = rawErr
	defer func() {
		out.Flush()
		errw.Flush()
		f.IO.Out, f.IO.Err = rawOut, rawErr
	}()
	app := NewApp(f)
	ctx, stop := withSignals(context.Background(), f)
	defer stop()
	if completeValues(ctx, f, app, args) {
		return ExitOK
	}
	err := app.RunContext(ctx, permuteArgs(app, args))
	var ue *UsageError
	if errors.As(err, &ue) && ue.Flags && asksJSON(args) {
		// The command never started, so its JSON stream did not either:
		// the events a consumer waits for still come.
		newJSONRenderer(f.IO.Out, false).close(err)
	}
	if err != nil {
		fmt.Fprintln(f.IO.Err, "decode: "+errorLine(err))
	}
	return ExitCode(err)
}

func init() {
	// -v alone prints the version; after a command it is that command's
	// --verbose (decode -v run … too): say so where both show.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (-v with a command that runs the model is its --verbose)", DisableDefaultText: true}
}

// NewApp builds the command tree.
func NewApp(f *Factory) *cli.App {
	app := &cli.App{
		Name:                 "decode",
		Usage:                "a git-native coding agent for the command line",
		Version:              versionLine(f),
		Reader:               f.IO.In,
		Writer:               f.IO.Out,
		ErrWriter:            f.IO.Err,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError:         onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory (before or after the command)"},
		},
		Before: func(c *cli.Context) error {
			f.Dir = c.String("dir")
			return nil
		},
		Description: `decode answers questions and carries out tasks with tools, streaming the
answer to stdout and recording every session in git (refs/decode/sessions/*).

Examples:
   git diff | decode ask "what does this change do?"
   decode run "rename Foo to Bar in pkg/x and run go test" --mode edit
   decode run -m script:testdata/scripts/demo.json "offline demo"
   decode log --jsonl @

Exit codes: 0 done, 1 error, 2 usage, 3 paused, 4 provider, 5 limit,
6 session conflict, 130 interrupted.`,
		Commands: []*cli.Command{
			NewCmdAsk(f, nil),
			NewCmdRun(f, nil),
			NewCmdPlan(f, nil),
			NewCmdResume(f, nil),
			NewCmdLog(f, nil),
			NewCmdFork(f, nil),
			NewCmdDiff(f, nil),
			NewCmdRewind(f, nil),
			NewCmdReplay(f, nil),
			NewCmdApprove(f, nil),
			NewCmdDeny(f, nil),
			NewCmdAnswer(f, nil),
			NewCmdSteer(f, nil),
			NewCmdCompact(f, nil),
			NewCmdMemory(f, nil),
			NewCmdModels(f, nil),
			NewCmdHook(f, nil),
			NewCmdCompletion(f, nil),
			NewCmdDoctor(f, nil),
			NewCmdTrust(f, nil),
			NewCmdAuth(f, nil),
			NewCmdProxy(f, nil),
			NewCmdVersion(f),
			NewCmdMCP(f, nil),
			NewCmdServe(f, nil),
			NewCmdACP(f, nil),
		},
		Action: rootAction,
	}
	return app
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return &UsageError{Msg: err.Error() + flagSuggestion(c, err) + " (see decode --help)", Flags: true}
}

// errorLine renders an error as one line for stderr.
func errorLine(err error) string {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue.Msg
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted; the session is saved (decode resume continues it)"
	}
	line := strings.ReplaceAll(withHints(err), "\n", " ")
	// Main prefixes every line with "decode: "; errors decode itself
	// raises (llm.Error with provider "decode") carry it already.
	for strings.HasPrefix(line, "decode: ") {
		line = strings.TrimPrefix(line, "decode: ")
	}
	if e := llm.AsError(err); e != nil {
		if hint := providerHint(e.Kind); hint != "" && !strings.Contains(line, hint) && !strings.Contains(line, "decode compact") {
			line += " — " + hint
		}
	}
	return line
}

// withHints renders err with what to do about a pause, a limit, a full
// context or a session that cannot be compacted yet, in the
// CLI's words: the loop's errors name no commands or flags.
func withHints(err error) string {
	var pe *agent.PausedError
	var le *agent.LimitError
	var cf *agent.ContextFullError
	switch {
	case errors.As(err, &pe):
		id := "@"
		var ps *pausedSession
		if errors.As(err, &ps) {
			id = ps.ID
		}
		return strings.Replace(err.Error(), pe.Error(), pe.Error()+" ("+pauseHint(pe.Waits, id)+")", 1)
	case errors.As(err, &le):
		hint := le.Error()
		if flag := limitFlags[le.Limit]; flag != "" {
			hint = fmt.Sprintf("%s limit reached (%s; raise %s)", le.Limit, le.Value, flag)
		}
		return strings.Replace(err.Error(), le.Error(), hint, 1)
	case errors.As(err, &cf):
		id := cmp.Or(cf.Session, "SESSION")
		hint := fmt.Sprintf("; compact it yourself with decode compact %s --focus TEXT (what the summary must keep), or branch it from an earlier entry with decode fork %s@N", id, id)
		return strings.Replace(err.Error(), cf.Error(), cf.Error()+hint, 1)
	case errors.Is(err, agent.ErrOpenCalls):
		msg := agent.ErrOpenCalls.Error()
		return strings.Replace(err.Error(), msg, msg+": continue it with decode resume, or decide with decode approve or deny, before compacting", 1)
	}
	return err.Error()
}

// limitFlags names the flag that raises each limit.
var limitFlags = map[string]string{"turns": "--max-turns", "steps": "--max-steps", "cost": "--max-cost", "time": "--timeout"}

// pauseHint gives the exact commands that release what a paused run, in
// session id, waits for and continue it.
func pauseHint(waits []session.ApprovalRequestData, id string) string {
	var release []string
	approval, timed := false, false
	for _, w := range waits {
		var h string
		switch w.Kind {
		case session.WaitQuestion:
			h = "decode answer " + id + " ANSWER"
		case session.WaitTime:
			timed = true
			continue
		default:
			approval = true
			h = "decode approve " + id
		}
		if !slices.Contains(release, h) {
			release = append(release, h)
		}
	}
	resume := "decode resume " + id
	if len(release) == 0 {
		if timed {
			return resume + " once it is time, or decode resume --due"
		}
		return resume
	}
	hint := strings.Join(append(release, resume), " && ")
	if approval {
		hint += "; to refuse: decode deny " + id + " REASON && " + resume
	}
	return hint
}

// providerHint says what to do about a provider failure.
func providerHint(k llm.ErrorKind) string {
	switch k {
	case llm.ErrAuth:
		return "check the API key (decode doctor shows which are set)"
	case llm.ErrQuota:
		return "check the account's plan and billing, or use another model with -m"
	case llm.ErrRateLimit, llm.ErrOverloaded, llm.ErrServer, llm.ErrNetwork, llm.ErrTruncated:
		return "try again later, or use another model with -m; decode resume continues the session"
	case llm.ErrMalformed:
		return "the provider sent data decode could not read; try again, or another model with -m"
	case llm.ErrNotFound:
		return "check the model name and base URL (decode models lists known models)"
	case llm.ErrContextTooLong:
		return "the conversation no longer fits the model's context window: shorten it with decode compact SESSION --focus TEXT, or branch it from an earlier entry with decode fork SESSION@N"
	}
	return ""
}

// permuteArgs moves flags that follow positional arguments in front of them,
// so that `decode run "task" --mode edit` works as users type it. "--" ends
// the flags.
func permuteArgs(app *cli.App, args []string) []string {
	// A shell completion request (decode completion) must keep its words in
	// place: urfave/cli reads the word before the flag.
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args
	}
	out := []string{args[0]}
	i := 1
	// Global flags before the command name stay where they are, but for
	// -v: alone it is --version; before a command (decode -v run …) it is
	// that command's --verbose, not a version line that drops the command.
	var verbose []string
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if a := args[i]; (a == "-v" || a == "--verbose") && i+1 < len(args) && app.Command(args[i+1]) != nil {
			verbose = append(verbose, a)
			i++
			continue
		}
		out = append(out, args[i])
		if name := strings.TrimLeft(args[i], "-"); (name == "C" || name == "dir") && i+1 < len(args) {
			out = append(out, args[i+1]) // -C DIR before the command
			i++
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	cmd := app.Command(args[i])
	out = append(out, args[i])
	i++
	if cmd == nil {
		return append(out, args[i:]...)
	}
	// A command with subcommands (decode mcp add): flags belong to the
	// subcommand named next.
	for len(cmd.Subcommands) > 0 && i < len(args) {
		sub := subcommand(cmd, args[i])
		if sub == nil {
			break
		}
		out = append(out, args[i])
		cmd = sub
		i++
	}
	takesValue := valueFlags(cmd)
	flags, pos := verbose, []string(nil)
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	out = append(out, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

// subcommand returns cmd's subcommand called name, or nil.
func subcommand(cmd *cli.Command, name string) *cli.Command {
	for _, sub := range cmd.Subcommands {
		if sub.HasName(name) {
			return sub
		}
	}
	return nil
}

// valueFlags lists the names of a command's flags that take a value.
func valueFlags(cmd *cli.Command) map[string]bool {
	m := map[string]bool{}
	for _, fl := range cmd.Flags {
		if _, isBool := fl.(*cli.BoolFlag); isBool {
			continue
		}
		for _, n := range fl.Names() {
			m[n] = true
		}
	}
	return m
}

// asksJSON reports whether the command line asks for --json events.
func asksJSON(args []string) bool {
	for _, a := range args[1:] {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}
