package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"decode/agent"
	"decode/agent/llm"
	"decode/tools"
)

// approvalChoices is how the prompt offers its answers.
const approvalChoices = "[y]es/[a]lways/[N]o/no, because…"

// ttyApprover asks on the terminal whether a gated call may run. y runs
// it; a runs it and allows calls like it (the exact command, or the file)
// for the rest of the session, a rule the session records so a resume
// keeps it; n or Enter refuses it; "n REASON", or n and then the reason
// on the next line, refuses it and tells the model why, so it can adapt.
// Ctrl-C at the prompt cancels the run at once (prompting tells the
// signal handler a prompt is open), so each read gives way to ctx.
func ttyApprover(s *IOStreams, r sync.Locker, prompting func() func(), help promptHelp) agent.Approver {
	return func(ctx context.Context, call llm.ToolCall, v tools.Verdict) agent.Approval {
		tty, err := s.TTY()
		if err != nil {
			return agent.Approval{Reason: "no terminal to ask for approval (" + err.Error() + ")"}
		}
		defer tty.Close()
		r.Lock()
		defer r.Unlock()
		if prompting != nil {
			defer prompting()()
		}
		flushStreams(s)
		// The whole call, escaped: a newline or an escape sequence in it
		// must show, never act on the terminal or hide what would run.
		what := promptCall(call.Args)
		diff := ""
		if help.preview != nil {
			diff = help.preview(ctx, call)
		}
		if diff != "" {
			what = terminalSafe(agent.Summarize(call.Args)) // the diff shows the rest
		}
		fmt.Fprintf(tty, "decode: allow %s %s? %s\n%s", terminalSafe(call.Name), what, terminalSafe(v.Reason), diff)
		always := ""
		if help.always != nil {
			always = help.always(call, v)
		}
		choices := approvalChoices
		if always == "" {
			choices = strings.Replace(choices, "[a]lways/", "", 1) // no rule names just this call
		} else {
			// What "always" allows, before anyone chooses it.
			fmt.Fprintf(tty, "(a allows %s for the rest of this session)\n", terminalSafe(always))
		}
		lines := readLines(tty)
		defer lines.stop()
		for {
			fmt.Fprint(tty, choices+" ")
			line, err := lines.next(ctx)
			if err != nil {
				return failed(ctx, tty, err)
			}
			a, known := parseApproval(line, always)
			switch {
			case !known:
				fmt.Fprintln(tty, "decode: answer y (yes), "+alwaysHint(always)+"n or Enter (no), or n and the reason")
				continue
			case a.OK && a.Always != "":
				fmt.Fprintf(tty, "decode: %s is allowed for the rest of this session\n", terminalSafe(a.Always))
			case !a.OK && a.Reason == "" && strings.TrimSpace(line) != "":
				// n alone: the reason, if any, comes on the next line.
				fmt.Fprint(tty, "because… (Enter for none) ")
				reason, err := lines.next(ctx)
				if err != nil && !errors.Is(err, io.EOF) {
					return failed(ctx, tty, err)
				}
				a.Reason = strings.TrimSpace(reason)
			}
			if !a.OK && a.Reason != "" {
				a.Reason = "the user declined this call and said: " + a.Reason
			}
			return a
		}
	}
}

func alwaysHint(always string) string {
	if always == "" {
		return ""
	}
	return "a (always " + terminalSafe(always) + "), "
}

// promptHelp is what the approval prompt learns from the run's gate and
// tools; either may be nil.
type promptHelp struct {
	// always returns the allow rule "always" would add for calls like
	// this one, or "" when no rule would let them through.
	always func(llm.ToolCall, tools.Verdict) string
	// preview returns what the call would change, as a diff ready for the
	// terminal, or "".
	preview func(context.Context, llm.ToolCall) string
}

// runPromptHelp is the prompt's help from a run's gate and tools: the
// exact rule ACP's "allow always" records too (alwaysRule), offered only
// when the gate would then allow the call; and the diff of a file tool's
// call (tools.Previewer), in colour when color is set.
func runPromptHelp(opts *agent.Options, color bool) promptHelp {
	var h promptHelp
	if opts.Tools != nil {
		h.preview = func(ctx context.Context, call llm.ToolCall) string {
			t, ok := opts.Tools.Get(call.Name)
			if !ok {
				return ""
			}
			p, ok := t.(tools.Previewer)
			if !ok {
				return ""
			}
			return promptDiff(p.Preview(ctx, call.Args), color)
		}
	}
	if g, ok := opts.Gate.(*tools.Gate); ok && opts.Tools != nil {
		h.always = func(call llm.ToolCall, v tools.Verdict) string {
			rule := alwaysRule(call, v)
			t, ok := opts.Tools.Get(call.Name)
			if rule == "" || !ok || !g.AllowsWith(rule, call.Name, t.ReadOnly(), call.Args) {
				return ""
			}
			return rule
		}
	}
	return h
}

// parseApproval reads one typed answer: y or yes; a or always (when
// always names a rule); nothing, n or no (a plain no); n or no followed by
// the reason. known is false for anything else.
func parseApproval(line, always string) (a agent.Approval, known bool) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	word = strings.TrimRight(strings.ToLower(word), ",.:;!")
	rest = strings.TrimSpace(rest)
	switch {
	case line == "":
		return agent.Approval{}, true
	case (word == "y" || word == "yes") && rest == "":
		return agent.Approval{OK: true}, true
	case (word == "a" || word == "always") && rest == "" && always != "":
		return agent.Approval{OK: true, Always: always}, true
	case word == "n" || word == "no":
		return agent.Approval{Reason: rest}, true
	}
	return agent.Approval{}, false
}

// ttyLines reads lines from the terminal in a goroutine of its own, so a
// read can give way to a cancelled context.
type ttyLines struct {
	ch   chan ttyLine
	done chan struct{}
	// err is the read error that ended the lines, returned from then on.
	err error
}

type ttyLine struct {
	line string
	err  error
}

func readLines(r io.Reader) *ttyLines {
	l := &ttyLines{ch: make(chan ttyLine), done: make(chan struct{})}
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			select {
			case l.ch <- ttyLine{line, err}:
			case <-l.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return l
}

// next returns the next line without its newline, or why there is none:
// ctx ended, or the terminal's input ended (io.EOF) or failed.
func (l *ttyLines) next(ctx context.Context) (string, error) {
	if l.err != nil {
		return "", l.err
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case t := <-l.ch:
		line := strings.TrimRight(t.line, "\r\n")
		if t.err != nil {
			l.err = t.err
			if line != "" && errors.Is(t.err, io.EOF) {
				return line, nil // the last line, unended
			}
		}
		return line, t.err
	}
}

// failed is the answer when a read gave no line: Ctrl-C cancels, the end
// of input (Ctrl-D) is a plain no.
func failed(ctx context.Context, tty io.Writer, err error) agent.Approval {
	fmt.Fprintln(tty)
	switch {
	case ctx.Err() != nil:
		return agent.Approval{Reason: "interrupted at the approval prompt"}
	case errors.Is(err, io.EOF):
		return agent.Approval{}
	}
	return agent.Approval{Reason: "could not read the answer"}
}

func (l *ttyLines) stop() { close(l.done) }

// maxPromptDiff caps the lines of a diff the approval prompt shows.
const maxPromptDiff = 40

// promptDiff renders a unified diff for the prompt: at most maxPromptDiff
// lines, then how many were cut; each line escaped (the model wrote it)
// with tabs as spaces; with color, added lines green, removed red, the
// headers dim.
func promptDiff(diff string, color bool) string {
	if diff == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == maxPromptDiff {
			fmt.Fprintf(&b, "… %s of the diff not shown\n", plural(len(lines)-i, "more line"))
			break
		}
		l = terminalSafe(strings.ReplaceAll(l, "\t", "    "))
		if color {
			switch {
			case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "@@ "):
				l = sgrDim + l + sgrReset
			case strings.HasPrefix(l, "+"):
				l = sgrGreen + l + sgrReset
			case strings.HasPrefix(l, "-"):
				l = sgrRed + l + sgrReset
			}
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// promptColor says whether the approval prompt, on the terminal, may use
// colour: not with NO_COLOR or TERM=dumb.
func promptColor(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}
