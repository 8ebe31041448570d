package agent

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// turnModel answers by the number of assistant messages already in the
// request, as the script provider does, so a resumed session picks up
// where it stopped. It records the requests it saw.
type turnModel struct {
	responses []llm.Response
	reqs      []llm.Request
}

func (m *turnModel) Name() string { return "fake:turns" }

func (m *turnModel) Stream(_ context.Context, req llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		m.reqs = append(m.reqs, req)
		n := 0
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleAssistant {
				n++
			}
		}
		if n >= len(m.responses) {
			yield(llm.Event{Kind: llm.EventError, Err: &llm.Error{Kind: llm.ErrBadRequest, Msg: "off script"}})
			return
		}
		r := m.responses[n]
		yield(llm.Event{Kind: llm.EventDone, Response: &r})
	}
}

// lastResults returns the tool results the latest request sent.
func (m *turnModel) lastResults(t *testing.T) []llm.ToolResult {
	t.Helper()
	require.NotEmpty(t, m.reqs)
	msgs := m.reqs[len(m.reqs)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleTool {
			return msgs[i].Results
		}
	}
	t.Fatal("no tool results in the last request")
	return nil
}

// askFor makes the gate ask about the named tools and deny "rm".
func askFor(names ...string) Gate {
	return gateFunc(func(name string, _ bool, _ json.RawMessage) tools.Verdict {
		if name == "rm" {
			return tools.Verdict{Decision: tools.Deny, Reason: "rm is denied by a rule"}
		}
		for _, n := range names {
			if n == name {
				return tools.Verdict{Decision: tools.Ask, Reason: name + " needs approval"}
			}
		}
		return tools.Verdict{Decision: tools.Allow}
	})
}

func decide(t *testing.T, log Log, decision, reason string) {
	t.Helper()
	pending := Pending(log.Entries())
	require.NotEmpty(t, pending, "something waits")
	for _, w := range pending {
		d := session.ApprovalData{CallID: w.Request.CallID, Hash: w.Request.Hash, Decision: decision}
		if decision == "answer" {
			d.Answer = reason
		} else {
			d.Reason = reason
		}
		require.NoError(t, log.Append(context.Background(), session.NewEntry(session.TypeApproval, d, "")))
	}
}

func endOf(t *testing.T, log Log) session.EndData {
	t.Helper()
	es := log.Entries()
	require.NotEmpty(t, es)
	require.Equal(t, session.TypeEnd, es[len(es)-1].Type)
	var d session.EndData
	require.NoError(t, es[len(es)-1].Decode(&d))
	return d
}

func TestPauseApproveResume(t *testing.T) {
	write := &fakeTool{name: "write", out: "written"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{"path":"a", "content":"x"}`)), say("done")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(write), Gate: askFor("write"), Log: log}

	_, err := Run(context.Background(), opts, "go")
	var pe *PausedError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Waits, 1)
	assert.Equal(t, "c1", pe.Waits[0].CallID)
	assert.Equal(t, CallHash("write", json.RawMessage(`{"content":"x","path":"a"}`)), pe.Waits[0].Hash)
	assert.Equal(t, "paused: write a needs approval: write needs approval", err.Error())
	assert.Empty(t, write.ran, "a call waiting for approval does not run")
	assert.Equal(t, []string{"user", "assistant", "approval_request", "end"}, types(log.Entries()))
	end := endOf(t, log)
	assert.Equal(t, session.Status("paused"), end.Status)
	assert.Equal(t, 3, end.Exit)
	assert.True(t, Resumable(log.Entries()))

	// Resuming before a decision changes nothing.
	n := len(log.Entries())
	_, err = Run(context.Background(), opts, "")
	require.ErrorIs(t, err, ErrPaused)
	assert.Len(t, log.Entries(), n, "a resume that is still paused records nothing")

	decide(t, log, "allow", "")
	assert.NotNil(t, Pending(log.Entries())[0].Decision)
	out, err := Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Equal(t, "done", out.Text)
	assert.Len(t, write.ran, 1, "the approved call runs once")
	assert.Equal(t, "written", m.lastResults(t)[0].Content)
	tail := types(log.Entries()[n:])
	assert.Equal(t, []string{"approval", "tool_call", "tool_result", "assistant", "end"}, tail)
	assert.Empty(t, Pending(log.Entries()))
	assert.False(t, Resumable(log.Entries()), "a finished turn needs a prompt")
}

func TestPauseDenyResume(t *testing.T) {
	write := &fakeTool{name: "write"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{}`)), say("ok, I will not")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(write), Gate: askFor("write"), Log: log}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, ErrPaused)
	decide(t, log, "deny", "use the other file")
	_, err = Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Empty(t, write.ran)
	res := m.lastResults(t)
	require.Len(t, res, 1)
	assert.True(t, res[0].IsError)
	assert.Equal(t, "the user denied this call: use the other file", res[0].Content)
}

func TestBatchWithMixedDecisions(t *testing.T) {
	read := &fakeTool{name: "read", readOnly: true, out: "contents"}
	write := &fakeTool{name: "write", out: "written"}
	rm := &fakeTool{name: "rm"}
	edit := &fakeTool{name: "edit", out: "edited"}
	m := &turnModel{responses: []llm.Response{
		say("", call("c1", "write", `{}`), call("c2", "read", `{}`), call("c3", "rm", `{}`), call("c4", "edit", `{}`)),
		say("done"),
	}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(read, write, rm, edit), Gate: askFor("write", "edit"), Log: log}
	_, err := Run(context.Background(), opts, "go")
	var pe *PausedError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Waits, 2, "both calls that need approval wait together")
	assert.Len(t, read.ran, 1, "an allowed call of the batch runs")
	assert.Empty(t, rm.ran)

	// Approve one, deny the other.
	pending := Pending(log.Entries())
	require.Len(t, pending, 2)
	for _, w := range pending {
		d := session.ApprovalData{CallID: w.Request.CallID, Hash: w.Request.Hash, Decision: "allow"}
		if w.Request.CallID == "c4" {
			d.Decision, d.Reason = "deny", "not now"
		}
		require.NoError(t, log.Append(context.Background(), session.NewEntry(session.TypeApproval, d, "")))
	}
	_, err = Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Len(t, read.ran, 1, "the read is not run again")
	assert.Len(t, write.ran, 1)
	assert.Empty(t, edit.ran)
	res := m.lastResults(t)
	require.Len(t, res, 4, "every call of the response has exactly one result")
	ids := []string{res[0].CallID, res[1].CallID, res[2].CallID, res[3].CallID}
	assert.Equal(t, []string{"c1", "c2", "c3", "c4"}, ids, "results keep the calls' order")
	assert.Equal(t, "written", res[0].Content)
	assert.Equal(t, "contents", res[1].Content)
	assert.Equal(t, "rm is denied by a rule", res[2].Content)
	assert.Equal(t, "the user denied this call: not now", res[3].Content)
	counts := map[string]int{}
	for _, e := range log.Entries() {
		if e.Type == session.TypeToolResult {
			var d session.ToolResultData
			require.NoError(t, e.Decode(&d))
			counts[d.CallID]++
		}
	}
	assert.Equal(t, map[string]int{"c1": 1, "c2": 1, "c3": 1, "c4": 1}, counts, "one result entry per call")
}

func TestApprovalForAnotherCallIsRefused(t *testing.T) {
	write := &fakeTool{name: "write"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{"path":"a"}`)), say("done")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(write), Gate: askFor("write"), Log: log}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, ErrPaused)
	d := session.ApprovalData{CallID: "c1", Hash: CallHash("write", json.RawMessage(`{"path":"b"}`)), Decision: "allow"}
	require.NoError(t, log.Append(context.Background(), session.NewEntry(session.TypeApproval, d, "")))
	_, err = Run(context.Background(), opts, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "different call")
	assert.Empty(t, write.ran, "a mismatched approval runs nothing")
}

func TestCallHashIsCanonical(t *testing.T) {
	a := CallHash("bash", json.RawMessage(`{"command":"ls","timeout_ms":5}`))
	assert.Equal(t, a, CallHash("bash", json.RawMessage(" {\"timeout_ms\": 5,\n \"command\": \"ls\"}")))
	assert.NotEqual(t, a, CallHash("bash", json.RawMessage(`{"command":"ls -a","timeout_ms":5}`)))
	assert.NotEqual(t, a, CallHash("read", json.RawMessage(`{"command":"ls","timeout_ms":5}`)))
	assert.Equal(t, CallHash("x", json.RawMessage(`{"n":12345678901234567890}`)), CallHash("x", json.RawMessage(`{ "n" : 12345678901234567890 }`)), "big numbers are kept exactly")
	assert.NotEqual(t, CallHash("x", json.RawMessage(`{"n":12345678901234567890}`)), CallHash("x", json.RawMessage(`{"n":12345678901234567891}`)))
}

func TestResumeWithPromptAnswersWhatWaits(t *testing.T) {
	write := &fakeTool{name: "write"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{}`)), say("fine")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(write), Gate: askFor("write"), Log: log}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, ErrPaused)
	_, err = Run(context.Background(), opts, "do something else")
	require.NoError(t, err)
	assert.Empty(t, write.ran)
	msgs := m.reqs[len(m.reqs)-1].Messages
	require.GreaterOrEqual(t, len(msgs), 2)
	assert.Equal(t, llm.RoleTool, msgs[len(msgs)-2].Role)
	assert.Contains(t, msgs[len(msgs)-2].Results[0].Content, "not approved")
	assert.Equal(t, "do something else", msgs[len(msgs)-1].Text, "the prompt follows the results")
}

func TestOnAskDenyDoesNotPause(t *testing.T) {
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{}`), call("c2", "sleep", `{"seconds":600}`)), say("ok")}}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(&fakeTool{name: "write"}, tools.NewSleep()), Gate: askFor("write"), Log: log, OnAsk: "deny"}, "go")
	require.NoError(t, err)
	res := m.lastResults(t)
	assert.Contains(t, res[0].Content, "no one is at a terminal")
	assert.Contains(t, res[1].Content, "cannot wait")
}

func TestCrashRecoveryNeverRunsACallTwice(t *testing.T) {
	done := &fakeTool{name: "write", out: "again"}
	read := &fakeTool{name: "read", readOnly: true, out: "fresh read"}
	bash := &fakeTool{name: "bash", out: "ran"}
	log := &MemoryLog{}
	add := func(typ string, v any) {
		require.NoError(t, log.Append(context.Background(), session.NewEntry(typ, v, "")))
	}
	calls := []llm.ToolCall{call("c1", "write", `{}`), call("c2", "bash", `{"command":"x"}`), call("c3", "read", `{}`), call("c4", "bash", `{"command":"y"}`)}
	add(session.TypeUser, session.UserData{Text: "go"})
	add(session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Calls: calls}})
	add(session.TypeToolCall, session.ToolCallData{CallID: "c1", Name: "write", Decision: "allow"})
	add(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "c1", Name: "write", Content: "written once"}})
	add(session.TypeToolCall, session.ToolCallData{CallID: "c2", Name: "bash", Decision: "allow"})
	add(session.TypeToolCall, session.ToolCallData{CallID: "c3", Name: "read", Decision: "allow"})
	// killed here: c2 may have run, c3 is read-only, c4 never started
	require.True(t, Resumable(log.Entries()))

	m := &turnModel{responses: []llm.Response{{}, say("recovered")}}
	out, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(done, read, bash), Gate: allowAll, Log: log}, "")
	require.NoError(t, err)
	assert.Equal(t, "recovered", out.Text)
	assert.Empty(t, done.ran, "a call with a logged result never runs again")
	assert.Equal(t, []string{`{"command":"y"}`}, bash.ran, "the interrupted bash call is not re-run; the one that never started runs")
	assert.Len(t, read.ran, 1, "a read-only call without a result runs again")
	res := m.lastResults(t)
	require.Len(t, res, 4)
	assert.Equal(t, "written once", res[0].Content)
	assert.True(t, res[1].IsError)
	assert.Contains(t, res[1].Content, "interrupted")
	assert.Equal(t, "fresh read", res[2].Content)
	assert.Equal(t, "ran", res[3].Content)
}

func TestQuestionPausesUntilAnswered(t *testing.T) {
	m := &turnModel{responses: []llm.Response{say("", call("q1", "ask_user", `{"question":"which version?"}`)), say("using v2")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(tools.NewAskUser(nil)), Gate: allowAll, Log: log}
	_, err := Run(context.Background(), opts, "upgrade")
	var pe *PausedError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, session.WaitQuestion, pe.Waits[0].Kind)
	assert.Equal(t, "which version?", pe.Waits[0].Question)
	decide(t, log, "answer", "yes, v2")
	out, err := Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Equal(t, "using v2", out.Text)
	assert.Equal(t, "yes, v2", m.lastResults(t)[0].Content)
}

func TestQuestionAtATerminalIsAsked(t *testing.T) {
	m := &turnModel{responses: []llm.Response{say("", call("q1", "ask_user", `{"question":"which?"}`)), say("ok")}}
	ask := tools.NewAskUser(func(_ context.Context, q string) (string, error) { return "the blue one (" + q + ")", nil })
	approve := func(context.Context, llm.ToolCall, tools.Verdict) Approval { return Approval{OK: true} }
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(ask), Gate: allowAll, Log: &MemoryLog{}, Approve: approve}, "go")
	require.NoError(t, err)
	assert.Equal(t, "the blue one (which?)", m.lastResults(t)[0].Content)
}

func TestLongSleepWaitsUntilDue(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := &turnModel{responses: []llm.Response{say("", call("s1", "sleep", `{"seconds":3600}`)), say("checked again")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(tools.NewSleep()), Gate: allowAll, Log: log, Now: clock}
	_, err := Run(context.Background(), opts, "poll")
	var pe *PausedError
	require.ErrorAs(t, err, &pe)
	require.NotNil(t, pe.Waits[0].Until)
	assert.Equal(t, now.Add(time.Hour), *pe.Waits[0].Until)
	assert.False(t, Due(log.Entries(), now.Add(30*time.Minute)))
	assert.True(t, Due(log.Entries(), now.Add(time.Hour)))

	now = now.Add(30 * time.Minute)
	n := len(log.Entries())
	_, err = Run(context.Background(), opts, "")
	require.ErrorIs(t, err, ErrPaused, "not yet due")
	assert.Len(t, log.Entries(), n)

	now = now.Add(time.Hour)
	out, err := Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Equal(t, "checked again", out.Text)
	assert.Equal(t, "the wait is over", m.lastResults(t)[0].Content)
	assert.False(t, Due(log.Entries(), now))
}

func TestShortSleepRuns(t *testing.T) {
	m := &turnModel{responses: []llm.Response{say("", call("s1", "sleep", `{"seconds":0.01}`)), say("ok")}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(tools.NewSleep()), Gate: allowAll, Log: &MemoryLog{}}, "go")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(m.lastResults(t)[0].Content, "waited"))
}

func TestDescribe(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	assert.Equal(t, `bash rm x needs approval: asks`,
		Describe(session.ApprovalRequestData{Name: "bash", Args: json.RawMessage(`{"command":"rm x"}`), Kind: session.WaitApproval, Reason: "asks"}))
	assert.Equal(t, `ask_user asks "which?"`, Describe(session.ApprovalRequestData{Name: "ask_user", Kind: session.WaitQuestion, Question: "which?"}))
	assert.Contains(t, Describe(session.ApprovalRequestData{Name: "sleep", Kind: session.WaitTime, Until: &until}), "waits until")
	err := &PausedError{Waits: []session.ApprovalRequestData{
		{Name: "bash", Args: json.RawMessage(`{"command":"rm x"}`)}, {Name: "edit", Args: json.RawMessage(`{"path":"a"}`)},
		{Name: "ask_user", Kind: session.WaitQuestion, Question: "which?"},
	}}
	assert.Equal(t, `paused: bash rm x needs approval; edit a needs approval; ask_user asks "which?"`, err.Error())
}

func TestResumeAtATerminalAsksNow(t *testing.T) {
	write := &fakeTool{name: "write"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "write", `{}`)), say("done")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(write), Gate: askFor("write"), Log: log}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, ErrPaused)
	var asked []string
	opts.Approve = func(_ context.Context, c llm.ToolCall, _ tools.Verdict) Approval {
		asked = append(asked, c.ID)
		return Approval{OK: true}
	}
	_, err = Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"c1"}, asked, "the person at the terminal decides what the headless run waited for")
	assert.Len(t, write.ran, 1)
}
