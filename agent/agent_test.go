package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// fakeModel answers each request with the next of its responses, and
// records the requests it saw.
type fakeModel struct {
	responses []llm.Response
	errs      map[int]error // request index → error instead
	reqs      []llm.Request
}

func (m *fakeModel) Name() string { return "fake:model" }

func (m *fakeModel) Stream(_ context.Context, req llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		i := len(m.reqs)
		m.reqs = append(m.reqs, req)
		if err := m.errs[i]; err != nil {
			yield(llm.Event{Kind: llm.EventError, Err: err})
			return
		}
		if i >= len(m.responses) {
			yield(llm.Event{Kind: llm.EventError, Err: &llm.Error{Kind: llm.ErrBadRequest, Msg: "no more responses"}})
			return
		}
		r := m.responses[i]
		if r.Message.Text != "" && !yield(llm.Event{Kind: llm.EventText, Text: r.Message.Text}) {
			return
		}
		yield(llm.Event{Kind: llm.EventDone, Response: &r})
	}
}

func say(text string, calls ...llm.ToolCall) llm.Response {
	stop := llm.StopEnd
	if len(calls) > 0 {
		stop = llm.StopToolUse
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Text: text, Calls: calls}, Stop: stop, Usage: llm.Usage{Input: 10, Output: 2}}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// fakeTool records its calls; it sees how many entries the log held when
// it ran, to check that its call was recorded first.
type fakeTool struct {
	name     string
	readOnly bool
	out      string
	panics   bool
	log      *recLog
	ran      []string
	seen     []int
}

func (f *fakeTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: f.name, Description: "fake", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (f *fakeTool) ReadOnly() bool { return f.readOnly }
func (f *fakeTool) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	if f.panics {
		panic("kaboom")
	}
	f.ran = append(f.ran, string(args))
	if f.log != nil {
		f.seen = append(f.seen, len(f.log.Entries()))
	}
	return tools.Result{Content: f.out, Note: "did it"}, nil
}

// recLog is a MemoryLog that records its batches.
type recLog struct {
	MemoryLog
	batches [][]string
}

func (r *recLog) Append(ctx context.Context, es ...session.Entry) error {
	var types []string
	for _, e := range es {
		types = append(types, e.Type)
	}
	r.batches = append(r.batches, types)
	return r.MemoryLog.Append(ctx, es...)
}

type gateFunc func(name string, readOnly bool, args json.RawMessage) tools.Verdict

func (g gateFunc) Check(name string, readOnly bool, args json.RawMessage) tools.Verdict {
	return g(name, readOnly, args)
}

var allowAll = gateFunc(func(string, bool, json.RawMessage) tools.Verdict { return tools.Verdict{Decision: tools.Allow} })

func types(es []session.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

func TestAnswerWithoutTools(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("hello")}}
	log := &recLog{}
	var text string
	out, err := Run(context.Background(), Options{
		Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: log, System: "sys",
		Start: &session.StartData{Model: "fake:model", Command: "ask"},
		Sink: func(ev Event) {
			if ev.Type == EventText {
				text += ev.Text
			}
		},
	}, "hi")
	require.NoError(t, err)
	assert.Equal(t, "hello", out.Text)
	assert.Equal(t, "hello", text)
	assert.Equal(t, 1, out.Turns)
	assert.Equal(t, llm.Usage{Input: 10, Output: 2}, out.Usage)
	assert.Equal(t, []string{"start", "user", "assistant", "end"}, types(log.Entries()))
	require.Len(t, m.reqs, 1)
	assert.Equal(t, "sys", m.reqs[0].System)
	assert.Equal(t, []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, m.reqs[0].Messages)
	var end session.EndData
	require.NoError(t, log.Entries()[3].Decode(&end))
	assert.Equal(t, session.Status("done"), end.Status)
}

func TestToolCallsRecordedBeforeSideEffects(t *testing.T) {
	log := &recLog{}
	reader := &fakeTool{name: "read", readOnly: true, out: "contents"}
	writer := &fakeTool{name: "write", out: "written", log: log}
	m := &fakeModel{responses: []llm.Response{
		say("working", call("c1", "read", `{"path":"a"}`), call("c2", "write", `{"path":"a"}`)),
		say("done"),
	}}
	out, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(reader, writer), Gate: allowAll, Log: log}, "go")
	require.NoError(t, err)
	assert.Equal(t, "done", out.Text)
	assert.Equal(t, []string{`{"path":"a"}`}, reader.ran)
	assert.Equal(t, []string{`{"path":"a"}`}, writer.ran)
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "tool_call", "tool_result", "assistant", "end"}, types(log.Entries()))
	// The write's tool_call (entry 5) was committed before the write ran.
	assert.Equal(t, []int{5}, writer.seen)
	// The second request answers both calls, in order.
	require.Len(t, m.reqs, 2)
	last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	assert.Equal(t, llm.RoleTool, last.Role)
	require.Len(t, last.Results, 2)
	assert.Equal(t, "c1", last.Results[0].CallID)
	assert.Equal(t, "contents", last.Results[0].Content)
	assert.Equal(t, "written", last.Results[1].Content)
}

// TestDenialCarriesTheCallersHint: how to allow a denied call is the
// caller's to say, in its own words.
func TestDenialCarriesTheCallersHint(t *testing.T) {
	gate := gateFunc(func(string, bool, json.RawMessage) tools.Verdict {
		return tools.Verdict{Decision: tools.Ask, Reason: "bash asks"}
	})
	m := &fakeModel{responses: []llm.Response{say("", call("1", "bash", `{}`)), say("ok")}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(&fakeTool{name: "bash"}), Gate: gate, Log: &MemoryLog{},
		OnAsk: "deny", AllowHint: "ask for --allow"}, "go")
	require.NoError(t, err)
	res := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Results
	require.Len(t, res, 1)
	assert.True(t, strings.HasSuffix(res[0].Content, "; do without it or ask for --allow"), res[0].Content)
}

func TestGateDenyAskAndUnknownTool(t *testing.T) {
	bash := &fakeTool{name: "bash"}
	rm := &fakeTool{name: "rm"}
	gate := gateFunc(func(name string, _ bool, _ json.RawMessage) tools.Verdict {
		if name == "rm" {
			return tools.Verdict{Decision: tools.Deny, Reason: "rm is not allowed"}
		}
		return tools.Verdict{Decision: tools.Ask, Reason: "bash asks"}
	})
	run := func(approve Approver) (*fakeModel, []llm.ToolResult) {
		m := &fakeModel{responses: []llm.Response{
			say("", call("1", "rm", `{}`), call("2", "bash", `{"command":"ls"}`), call("3", "nope", `{}`)),
			say("ok"),
		}}
		_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(bash, rm), Gate: gate, Log: &MemoryLog{}, Approve: approve, OnAsk: "deny"}, "go")
		require.NoError(t, err)
		msgs := m.reqs[1].Messages
		return m, msgs[len(msgs)-1].Results
	}

	_, res := run(nil)
	require.Len(t, res, 3)
	assert.True(t, res[0].IsError)
	assert.Equal(t, "rm is not allowed", res[0].Content)
	assert.True(t, res[1].IsError, "ask without an approver is denied with --on-ask deny")
	assert.Contains(t, res[1].Content, "no one is at a terminal")
	assert.NotContains(t, res[1].Content, "--", "the loop names no flag")
	assert.Contains(t, res[2].Content, `no tool named "nope"`)
	assert.Contains(t, res[2].Content, "bash, rm")
	assert.Empty(t, rm.ran)
	assert.Empty(t, bash.ran)

	_, res = run(func(context.Context, llm.ToolCall, tools.Verdict) Approval { return Approval{Reason: "not today"} })
	assert.Equal(t, "not today", res[1].Content)
	assert.Empty(t, bash.ran)

	_, res = run(func(context.Context, llm.ToolCall, tools.Verdict) Approval { return Approval{OK: true} })
	assert.False(t, res[1].IsError)
	assert.Len(t, bash.ran, 1, "an approved call runs")
}

func TestPanickingToolIsAToolError(t *testing.T) {
	boom := &fakeTool{name: "boom", panics: true}
	m := &fakeModel{responses: []llm.Response{say("", call("1", "boom", `{}`)), say("recovered")}}
	out, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(boom), Gate: allowAll, Log: &MemoryLog{}}, "go")
	require.NoError(t, err)
	assert.Equal(t, "recovered", out.Text)
	res := m.reqs[1].Messages[2].Results[0]
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "kaboom")
}

func TestMaxTurns(t *testing.T) {
	ls := &fakeTool{name: "ls", readOnly: true}
	loop := say("", call("1", "ls", `{}`))
	m := &fakeModel{responses: []llm.Response{loop, loop, loop}}
	log := &MemoryLog{}
	out, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(ls), Gate: allowAll, Log: log, MaxTurns: 2}, "go")
	require.ErrorIs(t, err, ErrLimit)
	var le *LimitError
	require.True(t, errors.As(err, &le))
	assert.Equal(t, "turns", le.Limit)
	assert.Equal(t, 2, out.Turns)
	assert.Len(t, m.reqs, 2)
	es := log.Entries()
	assert.Equal(t, "limit", es[len(es)-2].Type)
	var end session.EndData
	require.NoError(t, es[len(es)-1].Decode(&end))
	assert.Equal(t, session.StatusLimit, end.Status)
	assert.Equal(t, 5, end.Exit)
}

func TestProviderErrorIsRecorded(t *testing.T) {
	m := &fakeModel{errs: map[int]error{0: &llm.Error{Kind: llm.ErrAuth, Provider: "fake", Msg: "bad key"}}}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: log}, "go")
	require.Error(t, err)
	assert.Equal(t, llm.ErrAuth, llm.AsError(err).Kind)
	assert.Equal(t, []string{"user", "error", "end"}, types(log.Entries()), "what was written before the failure is kept")
}

func TestCancelledRunIsRecorded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	log := &MemoryLog{}
	_, err := Run(ctx, Options{Model: &fakeModel{}, Tools: tools.NewRegistry(), Gate: allowAll, Log: log}, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"user", "interrupted", "end"}, types(log.Entries()))
}

func TestMessagesRebuildsContext(t *testing.T) {
	log := &MemoryLog{}
	add := func(typ string, v any) {
		require.NoError(t, log.Append(context.Background(), session.NewEntry(typ, v, "")))
	}
	add(session.TypeStart, session.StartData{Model: "x"})
	add(session.TypeUser, session.UserData{Text: "first"})
	add(session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Calls: []llm.ToolCall{call("a", "read", `{}`), call("b", "bash", `{}`)}}})
	add(session.TypeToolCall, session.ToolCallData{CallID: "a", Name: "read"})
	add(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "a", Name: "read", Content: "text"}})
	add(session.TypeToolCall, session.ToolCallData{CallID: "b", Name: "bash"})
	add("some_future_type", map[string]int{"x": 1})
	add(session.TypeUser, session.UserData{Text: "second"})

	msgs := Messages(log.Entries())
	require.Len(t, msgs, 4)
	assert.Equal(t, "first", msgs[0].Text)
	require.Len(t, msgs[2].Results, 2, "every call is answered")
	assert.Equal(t, "text", msgs[2].Results[0].Content)
	assert.True(t, msgs[2].Results[1].IsError)
	assert.Contains(t, msgs[2].Results[1].Content, "interrupted", "a call without a result is reported as interrupted")
	assert.Equal(t, "second", msgs[3].Text)
}

func TestSummarize(t *testing.T) {
	assert.Equal(t, "go test ./...", Summarize(json.RawMessage(`{"command":"go  test\n./..."}`)))
	assert.Equal(t, "main.go", Summarize(json.RawMessage(`{"path":"main.go","offset":3}`)))
	assert.Equal(t, "", Summarize(json.RawMessage(`not json`)))
}

func TestOutcomeAddSumsEverything(t *testing.T) {
	a := Outcome{Text: "first", Usage: llm.Usage{Input: 10, Output: 1}, Turns: 1, Cost: 0.25, Status: session.StatusError}
	b := Outcome{Text: "second", Usage: llm.Usage{Input: 5, Output: 2}, Turns: 2, Cost: 0.5, Status: session.StatusDone}
	got := a.Add(b)
	assert.Equal(t, Outcome{Text: "second", Usage: llm.Usage{Input: 15, Output: 3}, Turns: 3, Cost: 0.75, Status: session.StatusDone}, got)
	assert.Equal(t, b, Outcome{}.Add(b), "adding to nothing is the later outcome")
}

// TestApprovalAlways: "always" adds the rule to the gate, so the same
// call is not asked about again in the run, and records it as a spec
// entry, which a resume runs with.
func TestApprovalAlways(t *testing.T) {
	gate, err := tools.NewGate(tools.GateConfig{Root: t.TempDir(), Mode: tools.ModeDefault})
	require.NoError(t, err)
	bash := &fakeTool{name: "bash"}
	m := &fakeModel{responses: []llm.Response{
		say("", call("1", "bash", `{"command":"touch x"}`)),
		say("", call("2", "bash", `{"command":"touch x"}`), call("3", "bash", `{"command":"touch y"}`)),
		say("done"),
	}}
	var asked []string
	approve := func(_ context.Context, c llm.ToolCall, _ tools.Verdict) Approval {
		asked = append(asked, c.ID)
		if c.ID == "1" {
			return Approval{OK: true, Always: "bash(touch x)"}
		}
		return Approval{Reason: "not that one"}
	}
	log := &MemoryLog{}
	start := &session.StartData{Model: "m", Spec: &session.RunSpec{Mode: "default", Allow: []string{"read(**)"}}}
	_, err = Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(bash), Gate: gate, Log: log, Approve: approve, Start: start}, "go")
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "3"}, asked, "the call allowed always is not asked about again; another command is")
	assert.Len(t, bash.ran, 2)
	spec, _ := session.SpecOf(log.Entries())
	assert.Equal(t, []string{"read(**)", "bash(touch x)"}, spec.Allow, "the rule is recorded in the run spec")
	var changes int
	for _, e := range log.Entries() {
		if e.Type == session.TypeSpec {
			changes++
		}
	}
	assert.Equal(t, 1, changes, "one spec entry")
}
