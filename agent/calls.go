package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// runCalls gates and runs the calls of one model response in order, and
// records each decision before its tool runs and each result after.
func (l *loop) runCalls(ctx context.Context, calls []llm.ToolCall) error {
	results := llm.Message{Role: llm.RoleTool}
	for _, call := range calls {
		res := l.runCall(ctx, call)
		results.Results = append(results.Results, res)
		if ctx.Err() != nil {
			// Answer the calls that will not run, so the context stays
			// valid for the next request when the session is resumed.
			break
		}
	}
	l.msgs = append(l.msgs, results)
	return ctx.Err()
}

// runCall takes one call through the gate and, when allowed, runs it.
func (l *loop) runCall(ctx context.Context, call llm.ToolCall) llm.ToolResult {
	t, known := l.o.Tools.Get(call.Name)
	v := l.decide(ctx, t, known, call)
	summary := Summarize(call.Args)
	l.o.Sink(Event{Type: EventToolCall, Call: &call, Summary: summary, Decision: string(v.Decision), Reason: v.Reason})
	l.add(session.NewEntry(session.TypeToolCall, session.ToolCallData{
		CallID: call.ID, Name: call.Name, Args: safeArgs(call.Args), Decision: string(v.Decision), Reason: v.Reason,
	}, strings.TrimSpace(call.Name+" "+summary)))

	start := l.now()
	var res tools.Result
	switch {
	case v.Decision != tools.Allow:
		res = tools.Result{Content: v.Reason, IsError: true, Note: "denied"}
	default:
		if !t.ReadOnly() {
			// The call must be on disk before a side effect happens, so that a
			// crash leaves a call without a result rather than an unknown effect.
			if err := l.flush(ctx); err != nil {
				res = tools.Result{Content: "not run: " + err.Error(), IsError: true, Note: "not run"}
				break
			}
		}
		res = runTool(ctx, t, call.Args)
	}
	ms := l.now().Sub(start).Milliseconds()
	out := llm.ToolResult{CallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError}
	l.o.Sink(Event{Type: EventToolResult, Call: &call, Result: &out, Note: res.Note, Ms: ms})
	l.add(session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: out, Ms: ms},
		strings.TrimSpace(call.Name+" "+summary)))
	return out
}

// decide returns the gate's verdict, asking the approver when it says ask.
func (l *loop) decide(ctx context.Context, t tools.Tool, known bool, call llm.ToolCall) tools.Verdict {
	if !known {
		return tools.Verdict{Decision: tools.Deny, Reason: fmt.Sprintf("there is no tool named %q; use one of: %s", call.Name, strings.Join(l.names(), ", "))}
	}
	v := l.o.Gate.Check(call.Name, t.ReadOnly(), call.Args)
	if v.Decision != tools.Ask {
		return v
	}
	if l.o.Approve == nil {
		return tools.Verdict{Decision: tools.Deny, Reason: "not allowed without approval, and no one is at a terminal to approve it (" + v.Reason + "); do without it or ask the user to allow it with --allow or --mode"}
	}
	if ok, reason := l.o.Approve(ctx, call, v); !ok {
		if reason == "" {
			reason = "the user declined this call"
		}
		return tools.Verdict{Decision: tools.Deny, Reason: reason}
	}
	return tools.Verdict{Decision: tools.Allow, Reason: "approved by the user"}
}

func (l *loop) names() []string {
	var out []string
	for _, s := range l.o.Tools.Specs() {
		out = append(out, s.Name)
	}
	return out
}

// runTool runs a tool, turning a panic or a machinery error into a tool
// error the model sees; the run goes on.
func runTool(ctx context.Context, t tools.Tool, args json.RawMessage) (res tools.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = tools.Result{Content: fmt.Sprintf("the tool failed (panic: %v); try another way", r), IsError: true, Note: "panicked"}
		}
	}()
	res, err := t.Run(ctx, args)
	if err != nil {
		return tools.Result{Content: "the tool failed: " + err.Error(), IsError: true, Note: "failed"}
	}
	return res
}

// safeArgs keeps the arguments as JSON in the session: invalid JSON from the
// model is stored as a JSON string so the entry line stays valid.
func safeArgs(a json.RawMessage) json.RawMessage {
	if len(a) == 0 || json.Valid(a) {
		return a
	}
	s, _ := json.Marshal(string(a))
	return s
}

// Summarize picks the argument a person recognises a call by (the command,
// path, pattern or URL), on one line and short.
func Summarize(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "path", "pattern", "url", "query"} {
		if s, ok := m[k].(string); ok && s != "" {
			s = strings.Join(strings.Fields(s), " ")
			return clip(s, 80)
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
