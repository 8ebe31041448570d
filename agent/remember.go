package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/memory"
	"decode/prompts"
	"decode/session"
)

// Remember is --remember: at the end of a successful command, one short
// model call (no tools, the conversation with tool output clipped) asks
// for one sentence of what was learned about the project, which
// memory.Remember appends, dated, to the MEMORY.md at Path. Failures are
// warnings: the command itself succeeded.
type Remember struct {
	// Path is the MEMORY.md the sentence goes to.
	Path string
	// Now dates the sentence; nil means time.Now.
	Now func() time.Time
}

// run makes the remember call and returns its usage and cost.
func (r *Remember) run(ctx context.Context, opts Options, p Progress) Outcome {
	warn := func(format string, args ...any) { p.warn("remember: "+format, args...) }
	req := llm.Request{
		System:    prompts.Remember(),
		Messages:  rememberMessages(opts.Log.Entries()),
		MaxTokens: 300,
	}
	resp, err := llm.Collect(opts.Model.Stream(ctx, req))
	if err != nil {
		warn("%v", err)
		return Outcome{}
	}
	out := Outcome{Usage: resp.Usage, Turns: 1}
	if opts.Cost != nil {
		out.Cost = opts.Cost(resp.Model, resp.Usage)
	}
	sentence := rememberSentence(resp.Message.Text)
	if sentence == "" {
		p.say("nothing new to remember")
		return out
	}
	if len(sentence) > 400 {
		warn("the model's sentence is %d bytes long, not one sentence; not written", len(sentence))
		return out
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	wrote, err := memory.Remember(r.Path, sentence, now())
	switch {
	case errors.Is(err, memory.ErrSecret):
		warn("the sentence looks like it holds a secret; nothing written to %s", r.Path)
	case err != nil:
		warn("%v", err)
	case !wrote:
		p.say("already in %s: %s", r.Path, sentence)
	default:
		p.say("remembered in %s: %s", r.Path, sentence)
	}
	return out
}

// rememberMessages is the conversation for the remember call: the
// session's messages with every tool call and result turned into a short
// line of text, so no tool schemas are needed, the call stays cheap, and
// the conversation keeps its turns (the script model answers by counting
// them). The question comes last.
func rememberMessages(entries []session.Entry) []llm.Message {
	var out []llm.Message
	add := func(role llm.Role, text string) {
		if text = strings.TrimSpace(text); text == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Text += "\n\n" + text
			return
		}
		out = append(out, llm.Message{Role: role, Text: text})
	}
	for _, m := range Messages(entries) {
		switch m.Role {
		case llm.RoleUser:
			add(llm.RoleUser, clipText(m.Text, 4000))
		case llm.RoleAssistant:
			var b strings.Builder
			b.WriteString(m.Text)
			for _, c := range m.Calls {
				fmt.Fprintf(&b, "\n[called %s %s]", c.Name, Summarize(c.Args))
			}
			text := b.String()
			if strings.TrimSpace(text) == "" {
				text = "[no text]"
			}
			add(llm.RoleAssistant, clipText(text, 4000))
		case llm.RoleTool:
			var b strings.Builder
			for _, r := range m.Results {
				state := "result"
				if r.IsError {
					state = "error"
				}
				fmt.Fprintf(&b, "[%s of %s: %s]\n", state, r.Name, clipText(r.Content, 300))
			}
			add(llm.RoleUser, b.String())
		}
	}
	add(llm.RoleUser, "The session is over. What one sentence should go into MEMORY.md? Answer with only the sentence, or NONE.")
	return out
}

// clipText keeps the first n bytes of s (on a rune boundary), marking a cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + " […]"
}

// rememberSentence takes the model's answer apart: its first non-blank
// line without list markers or quotes, or "" for NONE.
func rememberSentence(answer string) string {
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-*• ")
		line = strings.Trim(line, "\"'`“”")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.EqualFold(strings.TrimRight(line, ". "), "none") {
			return ""
		}
		return line
	}
	return ""
}
