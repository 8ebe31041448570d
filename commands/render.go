package commands

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"

	"decode/agent"
)

// renderer prints a run as plain text: the answer on stdout, one line per
// tool call on stderr. At a terminal (stdout is one) the text streams as
// it arrives, including what the model says before its tool calls. In a
// pipe, or with -q, each response's text is held until it is known to be
// an answer (the response ended and no tool call followed) and only
// answers reach stdout; the narration before tool calls goes to stderr
// (nowhere with -q), so `decode ask … > msg.txt` captures the answer alone.
type renderer struct {
	io    *IOStreams
	quiet bool
	// hold is whether text is held back until it is known to be an answer.
	hold bool
	mu   sync.Mutex
	// atLineStart is whether stdout's last byte was a newline (or nothing
	// has been printed), so the answer always ends with one.
	atLineStart bool
	wrote       bool
	// final holds the current response's text when hold is set.
	final strings.Builder
	// ended is whether the model's response ended since the last text,
	// with no tool call after it: more text then starts another answer
	// (a follow-up's, or a before_finish hook's).
	ended bool
}

func newRenderer(s *IOStreams, quiet bool) *renderer {
	return &renderer{io: s, quiet: quiet, hold: quiet || !s.OutTTY, atLineStart: true}
}

func (r *renderer) event(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case agent.EventText:
		if ev.Text == "" {
			return
		}
		if r.ended {
			// The last response was an answer, and another one begins.
			r.ended = false
			r.answer()
		}
		t := ev.Text
		if r.wrote && r.atLineStart && r.final.Len() == 0 {
			// An answer after another starts on the next line, not after
			// an empty one.
			t = strings.TrimLeft(t, "\n")
		}
		if r.hold {
			r.final.WriteString(t)
			return
		}
		r.text(t)
	case agent.EventUsage:
		if r.ended {
			// Two responses ended in a row: the first was an answer.
			r.answer()
		}
		r.ended = true
	case agent.EventToolCall, agent.EventApprovalRequest:
		r.ended = false
		r.narration()
		if !r.atLineStart {
			r.text("\n")
		}
		if ev.Type == agent.EventApprovalRequest && !r.quiet {
			fmt.Fprintln(r.io.Err, "⏸ "+ev.Reason)
		}
	case agent.EventToolResult:
		if !r.quiet {
			fmt.Fprintln(r.io.Err, toolLine(ev))
			r.todoList(ev)
		}
	case agent.EventRetry:
		r.final.Reset()
		if !r.atLineStart {
			r.text("\n")
		}
		if !r.quiet {
			fmt.Fprintf(r.io.Err, "decode: %v; retrying (attempt %d)\n", ev.Err, ev.Attempt)
		}
	case agent.EventWarning:
		fmt.Fprintln(r.io.Err, "decode: warning: "+ev.Text)
	case agent.EventSteer:
		if !r.quiet {
			fmt.Fprintln(r.io.Err, "↪ steer: "+firstLineOf(ev.Text))
		}
	case agent.EventCompaction:
		if !r.quiet && ev.Compaction != nil {
			if !r.atLineStart {
				r.text("\n")
			}
			fmt.Fprintln(r.io.Err, compactionLine(*ev.Compaction))
		}
	}
}

// compactionLine is the one line a compaction gets on stderr.
func compactionLine(c agent.Compaction) string {
	how := c.Strategy
	switch c.Strategy {
	case "summary":
		how = "summarised"
	case "elide":
		how = "old tool outputs elided"
	case "fewer":
		how = "fewer recent turns kept"
	}
	return fmt.Sprintf("⇣ compacted the context (%s): %d → %d tokens, %s folded, %s", c.Trigger,
		c.TokensBefore, c.TokensAfter, plural(c.Folded, "entry"), how)
}

// narration sends the held text of a response that goes on with tool
// calls to stderr (with -q, nowhere).
func (r *renderer) narration() {
	t := strings.TrimSpace(r.final.String())
	r.final.Reset()
	if t != "" && !r.quiet {
		fmt.Fprintln(r.io.Err, t)
	}
}

// answer prints the held text of a response that was an answer, on
// lines of its own; at a terminal it only ends the streamed line.
func (r *renderer) answer() {
	if !r.atLineStart {
		r.text("\n")
	}
	r.text(r.final.String())
	r.final.Reset()
	if !r.atLineStart {
		r.text("\n")
	}
}

// todoList prints the task list a todo call set, under its tool line, so
// a person watching sees the plan as the model keeps it.
func (r *renderer) todoList(ev agent.Event) {
	if ev.Call == nil || ev.Call.Name != "todo" || ev.Result == nil || ev.Result.IsError {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(ev.Result.Content, "\n"), "\n") {
		fmt.Fprintln(r.io.Err, "  "+line)
	}
}

func (r *renderer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(r.io.Out, s)
	r.wrote = true
	r.atLineStart = strings.HasSuffix(s, "\n")
}

func (r *renderer) warn(s string) {
	fmt.Fprintln(r.io.Err, "decode: warning: "+s)
}

// finish prints the held answer and ends stdout with a newline. A run
// that ends in an error (a pause, a limit) printed no answer: what it held
// was narration.
func (r *renderer) finish(out agent.Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.answer()
	} else {
		r.narration()
	}
	if !r.atLineStart {
		r.text("\n")
	}
	if err == nil && !r.quiet && out.Turns > 0 {
		fmt.Fprintf(r.io.Err, "decode: %s, %s\n", plural(out.Turns, "model request"), usageSummary(out.Usage, out.Cost))
	}
}

// toolLine is the one line a tool call gets on stderr: the tool's own
// summary of what it did, or for a failure the call and the first line of
// the error.
func toolLine(ev agent.Event) string {
	if ev.Result != nil && !ev.Result.IsError && ev.Note != "" {
		return "• " + ev.Note
	}
	line := ev.Call.Name
	if s := agent.Summarize(ev.Call.Args); s != "" {
		line += " " + s
	}
	if ev.Result == nil {
		return "• " + line
	}
	if ev.Result.IsError {
		return "✗ " + line + ": " + firstLineOf(ev.Result.Content)
	}
	return "• " + line
}

func firstLineOf(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		t := sc.Text()
		if len(t) > 160 {
			t = t[:160] + "…"
		}
		return t
	}
	return ""
}

// flushStreams passes on what stdout's and stderr's redacting writers hold
// back (a line not yet ended, the spinner's clearing), so that it reaches
// the terminal before a prompt written to it directly.
func flushStreams(s *IOStreams) {
	for _, w := range []io.Writer{s.Out, s.Err} {
		if f, ok := w.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
}
