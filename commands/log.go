package commands

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"decode/session"
)

// LogOptions are the inputs of `decode log`.
type LogOptions struct {
	F       *Factory
	Dir     string
	Session string
	JSONL   bool
}

// NewCmdLog builds `decode log`.
func NewCmdLog(f *Factory, runF func(*cli.Context, *LogOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *LogOptions) error { return logRun(c, o) }
	}
	return &cli.Command{
		Name:      "log",
		Usage:     "list sessions, or show one",
		ArgsUsage: "[SESSION]",
		Description: `With no SESSION, lists this repository's sessions, newest first. With one,
prints its transcript. SESSION is an id, a unique prefix of one, @ for the
latest or @~N for the N-th before it.

   decode log
   decode log @
   decode log --jsonl @ | jq -c 'select(.type=="tool_call")'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "jsonl", Usage: "print the session's entries exactly as stored, one JSON object per line"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("log takes at most one SESSION")
			}
			return runF(c, &LogOptions{F: f, Dir: c.String("dir"), Session: c.Args().First(), JSONL: c.Bool("jsonl")})
		},
	}
}

func logRun(c *cli.Context, o *LogOptions) error {
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	st, err := session.OpenStore(dir, session.Env{Getenv: o.F.Getenv, Home: o.F.home()})
	if err != nil {
		return fmt.Errorf("open session store: %w", err)
	}
	out := o.F.IO.Out
	if o.Session == "" {
		if o.JSONL {
			return usageErrorf("--jsonl needs a SESSION")
		}
		infos, err := st.List(c.Context)
		if err != nil {
			return err
		}
		printList(out, infos, time.Now())
		return nil
	}
	s, err := st.Open(c.Context, o.Session)
	if err != nil {
		return err
	}
	for _, p := range s.Problems() {
		fmt.Fprintf(o.F.IO.Err, "decode: warning: %s line %d skipped: %s\n", p.Chunk, p.Line, p.Err)
	}
	if o.JSONL {
		data, err := s.JSONL(c.Context)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	printTranscript(out, s.Entries())
	return nil
}

func printList(w io.Writer, infos []session.Info, now time.Time) {
	for _, in := range infos {
		fmt.Fprintf(w, "%s  %-8s  %-10s  %-28s  %2d  %s\n", in.ID, age(now.Sub(in.Updated)), in.Status, in.Model, in.Turns, in.Title)
	}
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// printTranscript renders entries as plain text, one block per entry.
func printTranscript(w io.Writer, es []session.Entry) {
	for _, e := range es {
		switch e.Type {
		case session.TypeStart:
			var d session.StartData
			_ = e.Decode(&d)
			fmt.Fprintf(w, "# %s %s, mode %s, in %s (%s)\n", d.Command, d.Model, d.Mode, d.Cwd, e.TS.Format(time.RFC3339))
		case session.TypeUser, session.TypeSteer:
			var d session.UserData
			_ = e.Decode(&d)
			fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(d.Text, "\n", "\n> "))
		case session.TypeAssistant:
			var d session.AssistantData
			_ = e.Decode(&d)
			if d.Message.Text != "" {
				fmt.Fprintf(w, "\n%s\n", d.Message.Text)
			}
		case session.TypeToolCall:
			var d session.ToolCallData
			_ = e.Decode(&d)
			fmt.Fprintf(w, "  → %s %s [%s]\n", d.Name, string(d.Args), d.Decision)
		case session.TypeToolResult:
			var d session.ToolResultData
			_ = e.Decode(&d)
			status := "ok"
			if d.IsError {
				status = "error"
			}
			fmt.Fprintf(w, "  ← %s %s: %s\n", d.Name, status, firstLineOf(d.Content))
		case session.TypeEnd:
			var d session.EndData
			_ = e.Decode(&d)
			fmt.Fprintf(w, "\n# %s (exit %d): %d requests, %d tokens in, %d out, %d ms\n", d.Status, d.Exit, d.Turns, d.Usage.Input, d.Usage.Output, d.Ms)
		default:
			fmt.Fprintf(w, "  [%s] %s\n", e.Type, string(e.Data))
		}
	}
}
