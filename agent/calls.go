package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// runCalls settles every call of one model response, in order: calls with
// a logged result keep it, the rest are decided (by the gate, a person, a
// recorded approval, or crash recovery) and recorded, each decision before
// its tool runs and each result after. Calls that must wait for a person
// or a time are recorded as approval requests and the run pauses once the
// others are done, so no call is left without an answer on resume.
// t holds what the log already says about the calls; nil for a new response.
func (l *loop) runCalls(ctx context.Context, calls []llm.ToolCall, t *turn) error {
	if t == nil {
		t = newTurn(calls)
	}
	l.newStep()
	results := llm.Message{Role: llm.RoleTool}
	var waits []session.ApprovalRequestData
	for i, call := range calls {
		if r, ok := t.results[call.ID]; ok {
			results.Results = append(results.Results, r)
			continue
		}
		if i > 0 && (ctx.Err() != nil || l.stopping()) {
			// The calls not yet run stay unanswered in the log: a resume
			// takes them through the gate as if new.
			if err := ctx.Err(); err != nil {
				return err
			}
			return errStopped
		}
		res, wait := l.settle(ctx, call, t)
		if l.fatal != nil {
			return l.fatal
		}
		if err := ctx.Err(); err != nil && wait == nil && res.CallID == "" {
			// Cancelled at the approval prompt: the call stays unanswered,
			// and a resume asks again.
			return err
		}
		if wait != nil {
			waits = append(waits, *wait)
			continue
		}
		results.Results = append(results.Results, res)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(waits) > 0 {
		return &PausedError{Waits: waits}
	}
	l.msgs = append(l.msgs, results)
	return nil
}

// settle gives one call its result, or the request it must wait on.
func (l *loop) settle(ctx context.Context, call llm.ToolCall, t *turn) (llm.ToolResult, *session.ApprovalRequestData) {
	tool, known := l.o.Tools.Get(call.Name)
	if d, ok := t.started[call.ID]; ok {
		return l.recoverCall(ctx, call, tool, known, d), nil
	}
	if r, ok := t.requests[call.ID]; ok {
		if d, ok := t.answers[call.ID]; ok {
			return l.decided(ctx, call, tool, r, d), nil
		}
		return l.undecided(ctx, call, tool, r)
	}
	v := l.decide(ctx, tool, known, call)
	if ctx.Err() != nil {
		return llm.ToolResult{}, nil
	}
	if v.Decision == tools.Ask {
		return llm.ToolResult{}, l.pause(call, session.WaitApproval, v.Reason, tools.Wait{})
	}
	if v.Decision == tools.Allow && l.o.Approve == nil {
		if w, ok := waitFor(tool, call.Args, l.now()); ok {
			if l.o.OnAsk != "deny" {
				return llm.ToolResult{}, l.pause(call, waitKind(w), "", w)
			}
			v = tools.Verdict{Decision: tools.Deny, Reason: "this run cannot wait for a person or a time (it was started not to); go on without it"}
		}
	}
	return l.execute(ctx, call, tool, v), nil
}

// pauser is a tool whose call may have to wait, in a run no one watches,
// for a person's answer or a time (ask_user, a long sleep).
type pauser interface {
	Pause(args json.RawMessage, now time.Time) (tools.Wait, bool)
}

func waitFor(t tools.Tool, args json.RawMessage, now time.Time) (tools.Wait, bool) {
	if p, ok := t.(pauser); ok {
		return p.Pause(args, now)
	}
	return tools.Wait{}, false
}

func waitKind(w tools.Wait) string {
	if w.Until.IsZero() {
		return session.WaitQuestion
	}
	return session.WaitTime
}

// pause records that a call waits, instead of running it.
func (l *loop) pause(call llm.ToolCall, kind, reason string, w tools.Wait) *session.ApprovalRequestData {
	r := session.ApprovalRequestData{
		CallID: call.ID, Name: call.Name, Args: safeArgs(call.Args), Kind: kind, Reason: reason,
		Hash: CallHash(call.Name, call.Args), Question: w.Question,
	}
	if !w.Until.IsZero() {
		u := w.Until.UTC()
		r.Until = &u
	}
	summary := Summarize(call.Args)
	l.add(session.NewEntry(session.TypeApprovalReq, r, strings.TrimSpace(call.Name+" "+summary)))
	l.o.Sink(Event{Type: EventApprovalRequest, Call: &call, Summary: summary, Reason: Describe(r)})
	return &r
}

// decided carries out the approval, denial or answer recorded for a call.
func (l *loop) decided(ctx context.Context, call llm.ToolCall, tool tools.Tool, r session.ApprovalRequestData, d session.ApprovalData) llm.ToolResult {
	switch {
	case d.Decision == "answer" || r.Kind == session.WaitQuestion:
		answer := d.Answer
		if d.Decision != "answer" {
			answer = "(the user did not answer: " + orDefault(d.Reason, "declined") + ")"
		}
		return l.perform(ctx, call, tools.Verdict{Decision: tools.Allow, Reason: "answered by the user"}, true,
			func() tools.Result { return tools.Result{Content: answer, Note: "ask_user: answered"} })
	case d.Decision == string(tools.Allow):
		return l.execute(ctx, call, tool, tools.Verdict{Decision: tools.Allow, Reason: "approved by the user"})
	}
	return l.execute(ctx, call, tool, tools.Verdict{Decision: tools.Deny, Reason: denial(d.Reason)})
}

func denial(reason string) string {
	if reason == "" {
		return "the user denied this call"
	}
	return "the user denied this call: " + reason
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// undecided handles a call still waiting when the session is resumed: a
// person at the terminal decides now, a time that has come ends the wait,
// a new prompt answers it; otherwise it goes on waiting.
func (l *loop) undecided(ctx context.Context, call llm.ToolCall, tool tools.Tool, r session.ApprovalRequestData) (llm.ToolResult, *session.ApprovalRequestData) {
	const instead = "the user wrote a new message instead (see below)"
	switch {
	case r.Kind == session.WaitTime:
		if !l.superseded && r.Until != nil {
			left := r.Until.Sub(l.now())
			if left > tools.MaxHeadlessSleep && l.o.Approve == nil {
				return llm.ToolResult{}, &r
			}
			if err := sleepCtx(ctx, left); err != nil {
				return llm.ToolResult{}, &r // cancelled: still waiting
			}
		}
		content := "the wait is over"
		if l.superseded {
			content = "the wait was cut short: " + instead
		}
		return l.perform(ctx, call, tools.Verdict{Decision: tools.Allow, Reason: "waited"}, true,
			func() tools.Result { return tools.Result{Content: content, Note: "sleep: done"} }), nil
	case l.superseded && r.Kind == session.WaitQuestion:
		return l.perform(ctx, call, tools.Verdict{Decision: tools.Allow, Reason: "not answered"}, true,
			func() tools.Result { return tools.Result{Content: "(no answer: " + instead + ")"} }), nil
	case l.superseded:
		return l.execute(ctx, call, tool, tools.Verdict{Decision: tools.Deny, Reason: "not approved: " + instead}), nil
	case l.o.Approve == nil:
		return llm.ToolResult{}, &r
	case r.Kind == session.WaitQuestion:
		return l.execute(ctx, call, tool, tools.Verdict{Decision: tools.Allow}), nil // asks at the terminal
	}
	return l.execute(ctx, call, tool, l.approve(ctx, call, tools.Verdict{Decision: tools.Ask, Reason: r.Reason})), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// recoverCall answers a call whose decision is logged but whose result is
// not: the process died or was killed while it ran. A read-only call runs
// again; any other, or an external one (an MCP server's), is reported as
// interrupted, never run twice.
func (l *loop) recoverCall(ctx context.Context, call llm.ToolCall, tool tools.Tool, known bool, d session.ToolCallData) llm.ToolResult {
	var res tools.Result
	switch {
	case d.Decision != string(tools.Allow):
		res = tools.Result{Content: d.Reason, IsError: true, Note: "denied"}
	case known && tool.ReadOnly() && !tools.IsExternal(tool):
		res = runTool(ctx, tool, call.Args)
	default:
		res = tools.Result{Content: interruptedNote, IsError: true, Note: "interrupted"}
	}
	return l.result(call, res, 0)
}

// execute runs the before_tool hooks on an allowed call, then performs it.
func (l *loop) execute(ctx context.Context, call llm.ToolCall, tool tools.Tool, v tools.Verdict) llm.ToolResult {
	if v.Decision == tools.Allow && tool == nil {
		v = tools.Verdict{Decision: tools.Deny, Reason: fmt.Sprintf("there is no tool named %q in this run", call.Name)}
	}
	if v.Decision == tools.Allow {
		args, block := l.beforeTool(ctx, call)
		switch {
		case block != "":
			v = tools.Verdict{Decision: tools.Deny, Reason: block}
		case !bytes.Equal(args, call.Args):
			call.Args = args
			v.Reason = strings.TrimSpace(v.Reason + " (arguments rewritten by a before_tool hook)")
		}
	}
	// An external tool's call (an MCP server's) is committed before it
	// runs even when read-only, so that a crash leaves a call without a
	// result, which resume reports as interrupted.
	readOnly := tool != nil && tool.ReadOnly() && !tools.IsExternal(tool)
	return l.perform(ctx, call, v, readOnly, func() tools.Result { return runTool(ctx, tool, call.Args) })
}

// perform records the call with its verdict, runs it when allowed, and
// records the result. A call that is not read-only is committed before it
// runs, so that a crash leaves a call without a result rather than an
// unknown effect.
func (l *loop) perform(ctx context.Context, call llm.ToolCall, v tools.Verdict, readOnly bool, run func() tools.Result) llm.ToolResult {
	summary := Summarize(call.Args)
	l.o.Sink(Event{Type: EventToolCall, Call: &call, Summary: summary, Decision: string(v.Decision), Reason: v.Reason})
	l.add(session.NewEntry(session.TypeToolCall, session.ToolCallData{
		CallID: call.ID, Name: call.Name, Args: safeArgs(call.Args), Decision: string(v.Decision), Reason: v.Reason,
	}, strings.TrimSpace(call.Name+" "+summary)))
	callAt := len(l.pending) - 1

	start := l.now()
	var res tools.Result
	switch {
	case v.Decision != tools.Allow:
		res = tools.Result{Content: v.Reason, IsError: true, Note: "denied"}
	default:
		if !readOnly {
			l.snapshot(ctx, session.SnapBefore, call)
			if err := l.flush(ctx); err != nil {
				// The call was not recorded, so it must not run: its
				// tool_call entry is taken back, leaving the call
				// unanswered, and a resume takes it through the gate anew.
				l.pending = slices.Delete(l.pending, callAt, callAt+1)
				l.fatal = err
				l.o.Sink(Event{Type: EventToolResult, Call: &call, Result: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: "not run: " + err.Error(), IsError: true}, Note: "not run"})
				return llm.ToolResult{}
			}
		}
		res = run()
	}
	out := l.result(call, res, l.now().Sub(start).Milliseconds())
	if v.Decision == tools.Allow && !readOnly {
		l.snapshot(ctx, session.SnapAfter, call)
	}
	if v.Decision == tools.Allow {
		l.notify(ctx, HookEvent{Event: HookAfterTool, Tool: call.Name, CallID: call.ID, Args: safeArgs(call.Args), Result: out.Content, IsError: out.IsError})
	}
	return out
}

// result records a call's result and reports it.
func (l *loop) result(call llm.ToolCall, res tools.Result, ms int64) llm.ToolResult {
	out := llm.ToolResult{CallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError, Images: res.Images}
	l.o.Sink(Event{Type: EventToolResult, Call: &call, Result: &out, Note: res.Note, Ms: ms})
	var seen []session.FileSeen
	for _, f := range res.Seen {
		seen = append(seen, session.FileSeen{Path: f.Path, Mod: f.Mod, Size: f.Size})
	}
	l.add(session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: out, Ms: ms, Seen: seen},
		strings.TrimSpace(call.Name+" "+Summarize(call.Args))))
	return out
}

// decide returns the gate's verdict, asking the approver when it says ask.
// With no approver it stays ask (the run pauses), or becomes a denial the
// model can act on when OnAsk is deny.
func (l *loop) decide(ctx context.Context, t tools.Tool, known bool, call llm.ToolCall) tools.Verdict {
	if !known {
		return tools.Verdict{Decision: tools.Deny, Reason: fmt.Sprintf("there is no tool named %q; use one of: %s", call.Name, strings.Join(l.names(), ", "))}
	}
	v := l.o.Gate.Check(call.Name, t.ReadOnly(), call.Args)
	if v.Decision != tools.Ask {
		return v
	}
	if l.o.Approve == nil {
		if l.o.OnAsk == "deny" {
			reason := "not allowed without approval, and no one is at a terminal to approve it (" + v.Reason + "); do without it"
			if l.o.AllowHint != "" {
				reason += " or " + l.o.AllowHint
			}
			return tools.Verdict{Decision: tools.Deny, Reason: reason}
		}
		return v
	}
	return l.approve(ctx, call, v)
}

// approve asks the person at the terminal about a call the gate sent to ask.
func (l *loop) approve(ctx context.Context, call llm.ToolCall, v tools.Verdict) tools.Verdict {
	a := l.o.Approve(ctx, call, v)
	if !a.OK {
		if a.Reason == "" {
			a.Reason = "the user declined this call"
		}
		return tools.Verdict{Decision: tools.Deny, Reason: a.Reason}
	}
	if a.Always != "" {
		l.allowAlways(a.Always)
		return tools.Verdict{Decision: tools.Allow, Reason: "approved by the user for the rest of the session (" + a.Always + ")"}
	}
	return tools.Verdict{Decision: tools.Allow, Reason: "approved by the user"}
}

// ruleGate is a gate that takes allow rules while a run goes on
// (*tools.Gate).
type ruleGate interface {
	AddAllow(rule string) error
}

// allowAlways adds rule, which a person gave for the rest of the session,
// to the gate, and records it in the session as a spec entry adding it to
// the run spec's allow rules, which a resume runs with.
func (l *loop) allowAlways(rule string) {
	if g, ok := l.o.Gate.(ruleGate); ok {
		if err := g.AddAllow(rule); err != nil {
			l.o.Sink(Event{Type: EventWarning, Text: "the rule " + rule + " was not added: " + err.Error()})
			return
		}
	}
	spec, _ := session.SpecOf(slices.Concat(l.o.Log.Entries(), l.pending))
	spec, changes := spec.Override(session.RunSpec{Allow: []string{rule}})
	if len(changes) == 0 {
		return
	}
	l.add(session.NewEntry(session.TypeSpec, session.SpecData{Changes: changes, Spec: spec}, specNote(changes)))
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
