package commands

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent/llm"
	"decode/agent/llm/providers"
)

// flagValues are the values decode completes for a flag, by the flag's
// spellings: models and their aliases, modes, --on-ask, --sandbox.
var flagValues = map[string]func() []string{
	"model":   completionModels,
	"mode":    func() []string { return []string{"default", "plan", "edit", "bypass"} },
	"on-ask":  func() []string { return []string{"pause", "deny"} },
	"sandbox": func() []string { return []string{"auto", "strict", "off"} },
}

// flagShort maps the short spelling of a flag in flagValues to its long one.
var flagShort = map[string]string{"m": "model"}

// sessionArgCommands take a session as their first argument.
var sessionArgCommands = []string{"resume", "log", "fork", "replay", "approve", "deny", "answer", "steer"}

// positionalValueCommands are the commands whose arguments decode completes.
func positionalValueCommands() []string {
	return append([]string{"hook", "completion"}, sessionArgCommands...)
}

// completeValues answers a shell's completion request (the words typed so
// far, then --generate-bash-completion) for what urfave/cli cannot: a
// flag's value (flagValues) and the positional arguments that name
// sessions, git hooks or shells, and a command's subcommands (urfave/cli
// would offer its help command, "help h", too). It reports whether it
// answered; otherwise the command tree's own completion runs (flags).
func completeValues(ctx context.Context, f *Factory, app *cli.App, args []string) bool {
	n := len(args)
	if n < 3 || args[n-1] != "--generate-bash-completion" {
		return false
	}
	words := args[1 : n-1]
	// -C DIR before the command (the only global flag) is not the
	// command, but sessions are DIR's.
	for len(words) > 0 {
		if dir, ok := strings.CutPrefix(words[0], "--dir="); ok {
			f.Dir, words = dir, words[1:]
		} else if len(words) > 1 && (words[0] == "-C" || words[0] == "--dir") {
			f.Dir, words = words[1], words[2:]
		} else {
			break
		}
	}
	if len(words) == 0 {
		return false
	}
	var out []string
	if values, ok := valuesOfFlag(words[len(words)-1]); ok {
		out = values()
	} else {
		cmd, positional := words[0], 0
		for _, w := range words[1:] {
			if len(w) > 0 && w[0] != '-' {
				positional++
			}
		}
		switch {
		case cmd == "hook" && positional == 0:
			out = []string{"install", "uninstall"}
		case cmd == "hook" && positional == 1:
			for name := range gitHooks {
				out = append(out, name)
			}
			sort.Strings(out)
		case cmd == "completion" && positional == 0:
			out = []string{"bash", "zsh", "fish"}
		case positional == 0 && slices.Contains(sessionArgCommands, cmd):
			out = completionSessionIDs(ctx, f)
		case valueExpected(app, words):
			// A FILE or DIR after its flag (-o, --schema, -C): nothing, so
			// the shell completes file names; urfave/cli would offer the
			// long flags that start with the short one's letter.
		case strings.HasPrefix(words[len(words)-1], "-"):
			return false
		default:
			c := app.Command(cmd)
			if c == nil {
				return false
			}
			for _, w := range words[1:] {
				if sub := subcommand(c, w); sub != nil {
					c = sub
				}
			}
			for _, sub := range c.VisibleCommands() {
				if sub.Name != "help" {
					out = append(out, sub.Name)
				}
			}
		}
	}
	for _, o := range out {
		fmt.Fprintln(f.IO.Out, o)
	}
	return true
}

// valueExpected reports whether the last of words is a flag of its command
// that takes a value, written out in full: the next word is its value.
func valueExpected(app *cli.App, words []string) bool {
	c := app.Command(words[0])
	if c == nil || len(words) < 2 {
		return false
	}
	for _, w := range words[1:] {
		if sub := subcommand(c, w); sub != nil {
			c = sub
		}
	}
	last := words[len(words)-1]
	name := strings.TrimLeft(last, "-")
	return strings.HasPrefix(last, "-") && !strings.Contains(name, "=") && valueFlags(c)[name]
}

// valuesOfFlag returns the completion of the flag word (-m, --mode), if
// decode completes its value.
func valuesOfFlag(word string) (func() []string, bool) {
	var name string
	switch {
	case len(word) > 2 && word[:2] == "--":
		name = word[2:]
	case len(word) == 2 && word[0] == '-':
		name = flagShort[word[1:]]
	}
	values, ok := flagValues[name]
	return values, ok
}

// completionModels lists the model aliases (sonnet, flash, …), then every
// known model as PROVIDER:MODEL.
func completionModels() []string {
	var out []string
	for _, a := range providers.Aliases() {
		out = append(out, a.Name)
	}
	for _, m := range llm.KnownModels() {
		out = append(out, m.Provider+":"+m.Name)
	}
	return out
}

// completionSessionIDs lists this repository's sessions, newest first, for completion.
func completionSessionIDs(ctx context.Context, f *Factory) []string {
	st, err := openStore(f, "")
	if err != nil {
		return nil
	}
	infos, err := st.List(ctx)
	if err != nil {
		return nil
	}
	ids := []string{"@"}
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	return ids
}
