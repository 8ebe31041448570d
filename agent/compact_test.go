package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// stepModel calls a tool steps times, then answers; summary requests are
// answered by summarize. It records every request and can refuse chosen
// requests as too long, like a provider.
type stepModel struct {
	steps     int
	tool      string
	summarize func(req llm.Request) (string, error)
	tooLong   map[int]bool // index among step requests → refuse it
	pad       string       // added to every answer's text
	reqs      []llm.Request
	sums      []llm.Request
	stepN     int
}

func (m *stepModel) Name() string { return "fake:steps" }

func (m *stepModel) Stream(_ context.Context, req llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		if req.Purpose == llm.PurposeSummary {
			m.sums = append(m.sums, req)
			text, err := "Summary: files were read one by one.", error(nil)
			if m.summarize != nil {
				text, err = m.summarize(req)
			}
			if err != nil {
				yield(llm.Event{Kind: llm.EventError, Err: err})
				return
			}
			yield(llm.Event{Kind: llm.EventDone, Response: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Text: text}, Usage: llm.Usage{Input: 100, Output: 20}, Model: "fake"}})
			return
		}
		i := len(m.reqs)
		m.reqs = append(m.reqs, req)
		if m.tooLong[i] {
			yield(llm.Event{Kind: llm.EventError, Err: &llm.Error{Kind: llm.ErrContextTooLong, Provider: "fake", Status: 400, Msg: "prompt is too long"}})
			return
		}
		n := countAssistantMsgs(req.Messages) + req.Folded
		var r llm.Response
		if n < m.steps {
			r = say(fmt.Sprintf("step %d", n+1)+m.pad, call(fmt.Sprintf("c%d", n+1), m.tool, fmt.Sprintf(`{"path":"f%d.txt"}`, n+1)))
		} else {
			r = say("done")
		}
		r.Usage = llm.Usage{Input: requestTokens(req), Output: 10}
		yield(llm.Event{Kind: llm.EventDone, Response: &r})
	}
}

func countAssistantMsgs(ms []llm.Message) int {
	n := 0
	for _, m := range ms {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

// requestTokens is an independent count of a request's size: its JSON
// encoding at four bytes a token, which is more than the estimate counts.
func requestTokens(req llm.Request) int {
	b, _ := json.Marshal(struct {
		S string
		M []llm.Message
		T []llm.ToolSpec
	}{req.System, req.Messages, req.Tools})
	return len(b) / 4
}

func compactRun(t *testing.T, m *stepModel, o Options, prompt string) (*recLog, []Event, error) {
	t.Helper()
	log := &recLog{}
	var evs []Event
	o.Model, o.Log, o.Gate, o.System = m, log, allowAll, "You are a test."
	if o.Tools == nil {
		o.Tools = tools.NewRegistry(&fakeTool{name: "read", readOnly: true, out: strings.Repeat("data line\n", 150)},
			&fakeTool{name: "todo", readOnly: true, out: "[>] read every file\n[ ] report\n"})
	}
	o.Sink = func(ev Event) { evs = append(evs, ev) }
	_, err := Run(context.Background(), o, prompt)
	return log, evs, err
}

func compactions(es []session.Entry) []session.CompactionData {
	var out []session.CompactionData
	for _, e := range es {
		if e.Type == session.TypeCompaction {
			var d session.CompactionData
			if e.Decode(&d) == nil {
				out = append(out, d)
			}
		}
	}
	return out
}

func TestCompactionKeepsTheStateVerbatimAndEveryRequestFits(t *testing.T) {
	const task = "Read every file f1..f60 and report on each one.\nKeep the report short."
	const steer = "Also note which files are empty."
	m := &stepModel{steps: 60, tool: "read"}
	step := 0
	w := llm.Window{Context: 8000, MaxOutput: 1000}
	log, evs, err := compactRun(t, m, Options{
		Compaction: CompactOptions{Window: w, Mode: "edit", Rules: []string{"allow bash(go test *)"}},
		Steer: func() []string {
			step++
			if step == 5 {
				return []string{steer}
			}
			return nil
		},
	}, task)
	require.NoError(t, err)

	cs := compactions(log.Entries())
	require.GreaterOrEqual(t, len(cs), 3, "a 60-step session in an 8k window compacts several times")
	compacted := false
	for i, req := range m.reqs {
		assert.LessOrEqual(t, requestTokens(req), w.Context, "request %d fits the window", i)
		if req.Folded > 0 {
			compacted = true
			first := req.Messages[0].Text
			assert.Contains(t, first, task, "request %d carries the task verbatim", i)
			assert.Contains(t, first, steer, "request %d carries the steering message verbatim", i)
			assert.Contains(t, first, "Permission mode: edit")
			assert.Contains(t, first, "allow bash(go test *)")
		}
	}
	assert.True(t, compacted)
	require.NotEmpty(t, m.sums)
	assert.Equal(t, 1000, m.sums[0].MaxTokens, "a summary may use the model's whole answer (reasoning models think in it)")
	assert.Contains(t, m.sums[0].Messages[0].Text, "in at most 750 words")
	assert.Empty(t, m.sums[0].Tools, "a summary request offers no tools")
	assert.Equal(t, 61, len(m.reqs), "every step's request was made once, in place: the model kept its place")
	results := 0
	for _, e := range log.Entries() {
		if e.Type == session.TypeToolResult {
			results++
		}
	}
	assert.Equal(t, 60, results, "every raw entry is still in the log")
	for _, d := range cs {
		assert.Equal(t, session.CompactSummary, d.Strategy)
		assert.Less(t, d.TokensAfter, d.TokensBefore)
		assert.Equal(t, task, d.State.Task.Text)
		assert.Contains(t, d.State.Read, "f3.txt")
	}
	var seen int
	for _, ev := range evs {
		if ev.Type == EventCompaction {
			seen++
			assert.Equal(t, TriggerThreshold, ev.Compaction.Trigger)
		}
	}
	assert.Equal(t, len(cs), seen, "one event per compaction")
}

func TestCompactionStateRecordKeepsTodoAndFailures(t *testing.T) {
	es := []session.Entry{
		entry(1, session.TypeUser, session.UserData{Text: "the task"}),
		entry(2, session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Calls: []llm.ToolCall{
			call("a", "todo", `{"todos":[]}`), call("b", "edit", `{"path":"x.go"}`), call("c", "bash", `{"command":"go test"}`)}}}),
		entry(3, session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "a", Name: "todo", Content: "[ ] one\n"}}),
		entry(4, session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "b", Name: "edit", Content: "ok"}}),
		entry(5, session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "c", Name: "bash", Content: "FAIL parser_test.go:12", IsError: true}}),
		entry(6, session.TypeSteer, session.UserData{Text: strings.Repeat("old steer ", 50)}),
		entry(7, session.TypeUser, session.UserData{Text: "newest"}),
		entry(8, session.TypePlan, session.PlanData{Steps: []session.PlanStep{{N: 1, Text: "a"}, {N: 2, Text: "b"}}}),
		entry(9, session.TypePlanStep, session.PlanStepData{N: 1, Status: "done"}),
	}
	st := buildState(session.StateRecord{}, es, stateInput{mode: "plan", budget: 100})
	assert.Equal(t, "the task", st.Task.Text)
	assert.Equal(t, "[ ] one\n", st.Todo)
	assert.Equal(t, []string{"x.go"}, st.Modified)
	require.Len(t, st.Failed, 1)
	assert.Equal(t, 5, st.Failed[0].ID)
	assert.Contains(t, st.Failed[0].Error, "parser_test.go:12")
	require.Len(t, st.Messages, 2)
	assert.Equal(t, "", st.Messages[0].Text, "past the budget, the older message is given by reference")
	assert.Equal(t, 500, st.Messages[0].Bytes)
	assert.Equal(t, "newest", st.Messages[1].Text, "the newest in full")
	assert.Equal(t, 2, st.Step)
	text := foldedText(session.CompactionData{State: st, Summary: "sum"}, "S1")
	assert.Contains(t, text, `ref="decode log S1@6"`)
	assert.Contains(t, text, "[>] 2. b")
	assert.Contains(t, text, "<summary>\nsum\n</summary>")
}

func entry(id int, typ string, v any) session.Entry {
	e := session.NewEntry(typ, v, "")
	e.ID = id
	return e
}

func TestSummaryThatGrowsFallsBackToElidingToolOutputs(t *testing.T) {
	m := &stepModel{steps: 30, tool: "read", summarize: func(req llm.Request) (string, error) {
		return strings.Repeat("an ever longer summary ", 2000), nil
	}}
	log, _, err := compactRun(t, m, Options{Compaction: CompactOptions{Window: llm.Window{Context: 8000, MaxOutput: 1000}}}, "read them")
	require.NoError(t, err)
	cs := compactions(log.Entries())
	require.NotEmpty(t, cs)
	d := cs[0]
	assert.Equal(t, session.CompactElide, d.Strategy, "failed: %v", d.Failed)
	require.NotEmpty(t, d.Failed)
	assert.Contains(t, d.Failed[0], "not smaller than")
	assert.NotEmpty(t, d.Elided)
	assert.Equal(t, llm.Usage{Input: 100, Output: 20}, d.Usage, "the refused summary was still paid for")
	var sawPointer bool
	for _, req := range m.reqs {
		for _, msg := range req.Messages {
			for _, r := range msg.Results {
				if strings.HasPrefix(r.Content, "output elided: decode log SESSION@") {
					sawPointer = true
				}
			}
		}
	}
	assert.True(t, sawPointer, "the model sees a pointer in place of an elided output")
}

func TestSummaryErrorFallsBack(t *testing.T) {
	m := &stepModel{steps: 30, tool: "read", summarize: func(llm.Request) (string, error) {
		return "", &llm.Error{Kind: llm.ErrServer, Provider: "fake", Msg: "boom"}
	}}
	log, _, err := compactRun(t, m, Options{Compaction: CompactOptions{Window: llm.Window{Context: 8000, MaxOutput: 1000}}}, "read them")
	require.NoError(t, err)
	cs := compactions(log.Entries())
	require.NotEmpty(t, cs)
	assert.NotEqual(t, session.CompactSummary, cs[0].Strategy)
	assert.Contains(t, cs[0].Failed[0], "boom")
}

func TestOverflowAnswerCompactsAndRetriesOnce(t *testing.T) {
	m := &stepModel{steps: 6, tool: "read", tooLong: map[int]bool{4: true}}
	log, evs, err := compactRun(t, m, Options{}, "read them")
	require.NoError(t, err)
	cs := compactions(log.Entries())
	require.Len(t, cs, 1)
	assert.Equal(t, TriggerOverflow, cs[0].Trigger)
	assert.Len(t, m.reqs, 8, "7 steps and the one retry")
	assert.Positive(t, m.reqs[5].Folded, "the retry carries the compacted context")
	for _, e := range log.Entries() {
		assert.NotEqual(t, session.TypeError, e.Type, "a recovered overflow is no error")
	}
	var note bool
	for _, ev := range evs {
		note = note || ev.Type == EventCompaction
	}
	assert.True(t, note)

	// Refused again after compacting: the run fails, once, with advice.
	m = &stepModel{steps: 6, tool: "read", tooLong: map[int]bool{4: true, 5: true}}
	_, _, err = compactRun(t, m, Options{}, "read them")
	require.Error(t, err)
	e := llm.AsError(err)
	require.NotNil(t, e)
	assert.Equal(t, llm.ErrContextTooLong, e.Kind)
	assert.Len(t, m.reqs, 6, "retried once, not more")
}

func TestCompactionsInARowAreCapped(t *testing.T) {
	m := &stepModel{steps: 3, tool: "read"}
	l := &loop{o: Options{Model: m, Log: &MemoryLog{}, Sink: func(Event) {}}, compactions: maxCompactions}
	err := l.compact(context.Background(), TriggerOverflow, "", "too long")
	require.Error(t, err)
	var cf *ContextFullError
	require.ErrorAs(t, err, &cf, "typed, for the command to say what to do")
	assert.NotContains(t, err.Error(), "decode ", "the loop's errors name no commands")
	assert.Equal(t, llm.ErrContextTooLong, llm.AsError(err).Kind)
}

func TestManualCompactAndViewAcrossIt(t *testing.T) {
	m := &stepModel{steps: 8, tool: "read"}
	log, _, err := compactRun(t, m, Options{}, "read them")
	require.NoError(t, err)
	before := len(log.Entries())
	c, err := Compact(context.Background(), Options{Model: m, Log: log, Tools: tools.NewRegistry(), Compaction: CompactOptions{KeepTokens: 500}}, "the parser")
	require.NoError(t, err)
	assert.Equal(t, TriggerManual, c.Trigger)
	assert.Equal(t, session.CompactSummary, c.Strategy)
	require.Len(t, m.sums, 1)
	assert.Contains(t, m.sums[0].Messages[0].Text, "the parser", "the focus reaches the summariser")
	es := log.Entries()
	assert.Len(t, es, before+1, "one compaction entry; nothing else changed")
	msgs := Messages(es)
	assert.Contains(t, msgs[0].Text, "read them")
	assert.Less(t, len(msgs), len(Messages(es[:before])), "the context is rebuilt from the compaction")
	assert.Equal(t, Messages(es[:before]), messagesOf(es[:before]), "before the compaction (a fork there), the context is what it was")
	// A paused turn is not compacted.
	open := append(es[:len(es):len(es)], entry(999, session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Calls: []llm.ToolCall{call("z", "read", "{}")}}}))
	_, err = Compact(context.Background(), Options{Model: m, Log: &MemoryLog{entries: open}}, "")
	assert.ErrorIs(t, err, ErrOpenCalls)
}

func TestEstimatorStartsFromReportedUsage(t *testing.T) {
	var e estimator
	fifty := func() int { return 50 }
	msgs := []llm.Message{{Role: llm.RoleUser, Text: strings.Repeat("x", 400)}}
	assert.Equal(t, 50+messagesTokens(msgs), e.estimate(fifty, msgs), "no usage yet: everything is estimated")
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: "ok"})
	e.observe(llm.Usage{Input: 1000, Output: 20}, len(msgs))
	assert.Equal(t, 1020, e.estimate(fifty, msgs), "the provider's count of the context so far")
	msgs = append(msgs, llm.Message{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "c", Content: strings.Repeat("y", 4000)}}})
	assert.Equal(t, 1020+messageTokens(msgs[2]), e.estimate(fifty, msgs), "plus an estimate of what came after")
	e.reset()
	assert.Equal(t, 50+messagesTokens(msgs), e.estimate(fifty, msgs))
}

func TestBudgetsCountSummariesAndHoldAcrossATailRead(t *testing.T) {
	m := &stepModel{steps: 30, tool: "read"}
	cost := func(string, llm.Usage) float64 { return 0.01 }
	log, _, err := compactRun(t, m, Options{Cost: cost, Compaction: CompactOptions{Window: llm.Window{Context: 8000, MaxOutput: 1000}}}, "read them")
	require.NoError(t, err)
	es := log.Entries()
	cs := compactions(es)
	require.NotEmpty(t, cs)
	full := spentIn(es, cost)
	assert.Equal(t, 31, full.turns, "summaries are not turns")
	assert.InDelta(t, 0.01*float64(31+len(cs)), full.cost, 1e-9, "but their cost counts")
	// A resume that read only the first entries and those from the last
	// compaction on (session.OpenTail) counts the same.
	c, _ := lastCompaction(es)
	gap := append(append([]session.Entry{}, es[:3]...), es[c-2:]...)
	assert.Equal(t, full, spentIn(gap, cost))
}

func TestWhenElidingIsNotEnoughFewerTurnsAreKept(t *testing.T) {
	// The context is mostly the model's own long answers, which eliding
	// tool outputs does not shorten; the summary fails.
	m := &stepModel{steps: 30, tool: "read", pad: "\n" + strings.Repeat("a long explanation ", 60), summarize: func(llm.Request) (string, error) {
		return "", &llm.Error{Kind: llm.ErrServer, Provider: "fake", Msg: "boom"}
	}}
	o := Options{Compaction: CompactOptions{Window: llm.Window{Context: 8000, MaxOutput: 1000}}}
	o.Tools = tools.NewRegistry(&fakeTool{name: "read", readOnly: true, out: "ok"})
	log, _, err := compactRun(t, m, o, "read them")
	require.NoError(t, err)
	cs := compactions(log.Entries())
	require.NotEmpty(t, cs)
	assert.Equal(t, session.CompactFewer, cs[0].Strategy, "failed: %v", cs[0].Failed)
	assert.Len(t, cs[0].Failed, 2, "the summary and eliding were tried first")
	for i, req := range m.reqs {
		assert.LessOrEqual(t, requestTokens(req), 8000, "request %d fits", i)
	}
}

func TestNothingFitsFailsWithAdvice(t *testing.T) {
	// The task alone is larger than the window: no strategy can help.
	m := &stepModel{steps: 3, tool: "read"}
	log, _, err := compactRun(t, m, Options{Compaction: CompactOptions{Window: llm.Window{Context: 4000, MaxOutput: 500}}}, strings.Repeat("a very long task ", 2000))
	require.Error(t, err)
	e := llm.AsError(err)
	require.NotNil(t, e)
	assert.Equal(t, llm.ErrContextTooLong, e.Kind)
	var cf *ContextFullError
	require.ErrorAs(t, err, &cf)
	assert.Contains(t, err.Error(), "does not fit the model's context window")
	assert.Empty(t, m.reqs, "nothing too large was sent")
	assert.Contains(t, types(log.Entries()), session.TypeError, "the failure is recorded")
}
