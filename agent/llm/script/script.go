// Package script is a real provider that plays a scripted conversation from
// a JSON file: what to answer and which tools to call at each step. CI,
// demos and users' own pipelines use it to run decode deterministically with
// no network.
//
// The response to a request is chosen by the number of assistant messages
// already in it (counting those compaction folded out of it), so a script
// plays the same way when a session is resumed or compacted. A request for
// a summary (compaction) is answered from the script's summaries, or with
// a short summary of its own.
package script

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"decode/agent/llm"
)

// Script is the file format.
type Script struct {
	// Model is the name reported for responses; defaults to the file name.
	Model string `json:"model,omitempty"`
	// Responses are played one per model request, in order.
	Responses []Response `json:"responses"`
	// Summaries answer the requests for a summary that compaction makes,
	// in order, the last one repeating; without them the model answers
	// with a short summary of its own.
	Summaries []Response `json:"summaries,omitempty"`
}

// Response is one scripted model response.
type Response struct {
	Text  string `json:"text,omitempty"`
	Calls []Call `json:"calls,omitempty"`
	// Error makes the request fail instead: a kind of llm.ErrorKind
	// ("rate_limit", "auth", "server", "truncated", ...) and a message.
	Error *Error `json:"error,omitempty"`
	// Usage overrides the token counts, which default to estimates.
	Usage *llm.Usage `json:"usage,omitempty"`
	// Expect, when set, must occur in the last message of the request (a
	// tool result or the user's text); otherwise the script reports that
	// the conversation went off script.
	Expect string `json:"expect,omitempty"`
	// DelayMs waits before answering, to exercise timeouts and steering.
	DelayMs int `json:"delay_ms,omitempty"`
}

// Call is one scripted tool call. Args is any JSON value; RawArgs, when
// set, is sent verbatim instead (to script invalid arguments).
type Call struct {
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	RawArgs string          `json:"raw_args,omitempty"`
}

// Error is a scripted provider failure.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Status  int    `json:"status,omitempty"`
}

// Model plays a Script.
type Model struct {
	path   string
	script Script
	// summaries counts the summaries given, to play Script.Summaries in order.
	summaries atomic.Int64
}

// Load reads and checks a script file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script model: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a script held in memory; path names it in messages.
func Parse(path string, data []byte) (*Model, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("script %s is not a valid script file: %w (see README: Scripted model)", path, err)
	}
	if len(s.Responses) == 0 {
		return nil, fmt.Errorf("script %s has no responses", path)
	}
	for i, r := range s.Responses {
		for j, c := range r.Calls {
			if c.Name == "" {
				return nil, fmt.Errorf("script %s: response %d, call %d has no name", path, i+1, j+1)
			}
			if c.Args != nil && !json.Valid(c.Args) {
				return nil, fmt.Errorf("script %s: response %d, call %d: args are not JSON", path, i+1, j+1)
			}
		}
	}
	if s.Model == "" {
		s.Model = path
	}
	return &Model{path: path, script: s}, nil
}

// Reports is the model name the script's responses report (its "model"),
// under which they are priced.
func (m *Model) Reports() string { return m.script.Model }

// Name implements llm.Model.
func (m *Model) Name() string { return "script:" + m.path }

// Stream implements llm.Model. A request's ResponseSchema is ignored: the
// scripted text is the answer, valid or not, so that scripts can exercise
// decode's validation and its retry.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		r, err := m.pick(req)
		if err == nil && r.DelayMs > 0 {
			err = sleep(ctx, time.Duration(r.DelayMs)*time.Millisecond)
		}
		if err != nil {
			yield(llm.Event{Kind: llm.EventError, Err: err})
			return
		}
		if r.Error != nil {
			yield(llm.Event{Kind: llm.EventError, Err: &llm.Error{
				Kind: llm.ErrorKind(r.Error.Kind), Provider: "script", Status: r.Error.Status, Msg: r.Error.Message,
			}})
			return
		}
		for _, chunk := range chunks(r.Text) {
			if !yield(llm.Event{Kind: llm.EventText, Text: chunk}) {
				return
			}
		}
		msg := llm.Message{Role: llm.RoleAssistant, Text: r.Text}
		n := countAssistant(req.Messages) + req.Folded
		for i, c := range r.Calls {
			call := llm.ToolCall{ID: fmt.Sprintf("call_%d_%d", n+1, i+1), Name: c.Name, Args: c.Args}
			if c.RawArgs != "" {
				call.Args = json.RawMessage(c.RawArgs)
			} else if call.Args == nil {
				call.Args = json.RawMessage("{}")
			}
			msg.Calls = append(msg.Calls, call)
			if !yield(llm.Event{Kind: llm.EventToolCall, Call: &call}) {
				return
			}
		}
		resp := &llm.Response{Message: msg, Stop: llm.StopEnd, Model: m.script.Model, Usage: estimate(req, r)}
		if len(msg.Calls) > 0 {
			resp.Stop = llm.StopToolUse
		}
		yield(llm.Event{Kind: llm.EventDone, Response: resp})
	}
}

func (m *Model) pick(req llm.Request) (Response, error) {
	if req.Purpose == llm.PurposeSummary {
		return m.summary(req), nil
	}
	n := countAssistant(req.Messages) + req.Folded
	if n >= len(m.script.Responses) {
		return Response{}, &llm.Error{Kind: llm.ErrBadRequest, Provider: "script",
			Msg: fmt.Sprintf("script %s has %d responses and request %d asks for another; add responses to the script", m.path, len(m.script.Responses), n+1)}
	}
	r := m.script.Responses[n]
	if r.Expect != "" {
		last := lastText(req.Messages)
		if !strings.Contains(last, r.Expect) {
			return Response{}, &llm.Error{Kind: llm.ErrBadRequest, Provider: "script",
				Msg: fmt.Sprintf("script %s, response %d expects %q in the last message, which is %q", m.path, n+1, r.Expect, clip(last, 200))}
		}
	}
	return r, nil
}

// summary answers a request for a summary: the next of the script's
// summaries, else a short one of its own naming what the conversation
// did, so that scripted sessions compact with no script changes.
func (m *Model) summary(req llm.Request) Response {
	if k := len(m.script.Summaries); k > 0 {
		i := int(m.summaries.Add(1)) - 1
		return m.script.Summaries[min(i, k-1)]
	}
	text := lastText(req.Messages)
	calls := strings.Count(text, "\n→ ")
	return Response{Text: fmt.Sprintf("Scripted summary: the earlier conversation made %d tool calls; the state record holds the task and the user's messages.", calls)}
}

func countAssistant(ms []llm.Message) int {
	n := 0
	for _, m := range ms {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

func lastText(ms []llm.Message) string {
	if len(ms) == 0 {
		return ""
	}
	m := ms[len(ms)-1]
	var b strings.Builder
	b.WriteString(m.Text)
	for _, r := range m.Results {
		b.WriteString("\n")
		b.WriteString(r.Content)
	}
	return b.String()
}

// chunks splits text into word-sized deltas so that streaming is exercised.
func chunks(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s[1:], " \n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// estimate gives deterministic token counts: about four bytes a token.
func estimate(req llm.Request, r Response) llm.Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	in := len(req.System)
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	for _, m := range req.Messages {
		in += len(m.Text)
		for _, c := range m.Calls {
			in += len(c.Name) + len(c.Args)
		}
		for _, res := range m.Results {
			in += len(res.Content)
		}
	}
	out := len(r.Text)
	for _, c := range r.Calls {
		out += len(c.Name) + len(c.Args) + len(c.RawArgs)
	}
	return llm.Usage{Input: (in + 3) / 4, Output: (out + 3) / 4}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
