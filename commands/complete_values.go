package commands

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"decode/agent/llm"
)

// completeValues answers a shell's completion request (the words typed so
// far, then --generate-bash-completion) for what urfave/cli cannot: a
// flag's value (models, modes, --on-ask, --sandbox) and the positional
// arguments that name sessions or git hooks. It reports whether it
// answered; otherwise the command tree's own completion runs.
func completeValues(ctx context.Context, f *Factory, args []string) bool {
	n := len(args)
	if n < 3 || args[n-1] != "--generate-bash-completion" {
		return false
	}
	words := args[1 : n-1]
	prev := words[len(words)-1]
	var out []string
	switch prev {
	case "-m", "--model":
		for _, m := range llm.KnownModels() {
			out = append(out, m.Provider+":"+m.Name)
		}
	case "--mode":
		out = []string{"default", "plan", "edit", "bypass"}
	case "--on-ask":
		out = []string{"pause", "deny"}
	case "--sandbox":
		out = []string{"auto", "strict", "off"}
	default:
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
		case positional == 0 && slices.Contains([]string{"resume", "log", "fork", "replay", "approve", "deny", "answer", "steer"}, cmd):
			out = completionSessionIDs(ctx, f)
		default:
			return false
		}
	}
	for _, o := range out {
		fmt.Fprintln(f.IO.Out, o)
	}
	return true
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
