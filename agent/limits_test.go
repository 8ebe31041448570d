package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

func limitOf(t *testing.T, err error) string {
	t.Helper()
	var le *LimitError
	require.ErrorAs(t, err, &le)
	return le.Limit
}

func loopModel(n int) *turnModel {
	m := &turnModel{}
	for range n {
		m.responses = append(m.responses, say("", call("x", "ls", `{}`)))
	}
	return m
}

func TestMaxSteps(t *testing.T) {
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: loopModel(5), Tools: tools.NewRegistry(&fakeTool{name: "ls", readOnly: true}), Gate: allowAll, Log: log, MaxSteps: 2}, "go")
	assert.Equal(t, "steps", limitOf(t, err))
	es := log.Entries()
	assert.Equal(t, session.TypeLimit, es[len(es)-2].Type)
	assert.Equal(t, session.Status("limit"), endOf(t, log).Status)
}

func TestMaxCost(t *testing.T) {
	m := loopModel(5)
	cost := func(string, llm.Usage) float64 { return 0.25 }
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(&fakeTool{name: "ls", readOnly: true}), Gate: allowAll, Log: &MemoryLog{}, MaxCost: 0.6, Cost: cost}, "go")
	assert.Equal(t, "cost", limitOf(t, err))
	assert.Len(t, m.reqs, 3, "the request that passes the budget is the last")
}

func TestTimeoutCountsWallTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := &fakeTool{name: "ls", readOnly: true}
	tick := toolFunc{fakeTool: ls, run: func() { now = now.Add(40 * time.Second) }}
	m := loopModel(5)
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(tick), Gate: allowAll, Log: &MemoryLog{},
		Timeout: 100 * time.Second, Now: func() time.Time { return now }}, "go")
	assert.Equal(t, "time", limitOf(t, err))
	assert.Len(t, m.reqs, 3)
}

func TestTimeoutStopsARunningTool(t *testing.T) {
	block := toolFunc{fakeTool: &fakeTool{name: "ls", readOnly: true}, ctxRun: func(ctx context.Context) { <-ctx.Done() }}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: loopModel(2), Tools: tools.NewRegistry(block), Gate: allowAll, Log: log, Timeout: 20 * time.Millisecond}, "go")
	assert.Equal(t, "time", limitOf(t, err))
	assert.Contains(t, types(log.Entries()), session.TypeLimit)
}

func TestBudgetsAccumulateAcrossResumes(t *testing.T) {
	write := &fakeTool{name: "write"}
	m := &turnModel{responses: []llm.Response{
		say("", call("a", "ls", `{}`)),
		say("", call("b", "write", `{}`)),
		say("", call("c", "ls", `{}`)),
		say("done"),
	}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(&fakeTool{name: "ls", readOnly: true}, write), Gate: askFor("write"), Log: log, MaxTurns: 3}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, ErrPaused)
	decide(t, log, "allow", "")
	_, err = Run(context.Background(), opts, "")
	assert.Equal(t, "turns", limitOf(t, err), "the resumed run has one request left of three")
	assert.Len(t, m.reqs, 3)

	// A new prompt starts a new task with a fresh budget.
	_, err = Run(context.Background(), opts, "next task")
	require.NoError(t, err)
}

func TestSpentIn(t *testing.T) {
	log := &MemoryLog{}
	add := func(typ string, v any) {
		require.NoError(t, log.Append(context.Background(), session.NewEntry(typ, v, "")))
	}
	withCalls := session.AssistantData{Message: llm.Message{Calls: []llm.ToolCall{call("a", "x", `{}`)}}, Cost: 0.5}
	add(session.TypeUser, session.UserData{Text: "old task"})
	add(session.TypeAssistant, withCalls)
	add(session.TypeEnd, session.EndData{Ms: 9000})
	add(session.TypeUser, session.UserData{Text: "new task"})
	add(session.TypeAssistant, withCalls)
	add(session.TypeEnd, session.EndData{Ms: 1000})
	add(session.TypeApproval, session.ApprovalData{})
	add(session.TypeAssistant, session.AssistantData{Model: "m"})
	add(session.TypeUser, session.UserData{Text: "a follow-up inside the run"})
	add(session.TypeEnd, session.EndData{Ms: 2000})
	b := spentIn(log.Entries(), func(string, llm.Usage) float64 { return 0.25 })
	assert.Equal(t, budget{turns: 2, steps: 1, cost: 0.75, active: 3 * time.Second}, b)
}

func TestSoftStopEndsAtTheNextBoundary(t *testing.T) {
	stop := make(chan struct{})
	ls := toolFunc{fakeTool: &fakeTool{name: "ls", readOnly: true}, run: func() { close(stop) }}
	m := loopModel(3)
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(ls), Gate: allowAll, Log: log, Stop: stop}, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, m.reqs, 1, "the step in progress finishes, no new request starts")
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "interrupted", "end"}, types(log.Entries()))
	assert.Equal(t, session.Status("interrupted"), endOf(t, log).Status)
	assert.True(t, Resumable(log.Entries()))
}

func TestSoftStopBetweenCallsLeavesTheRestForResume(t *testing.T) {
	stop := make(chan struct{})
	first := toolFunc{fakeTool: &fakeTool{name: "one", out: "1"}, run: func() { close(stop) }}
	second := &fakeTool{name: "two", out: "2"}
	m := &turnModel{responses: []llm.Response{say("", call("a", "one", `{}`), call("b", "two", `{}`)), say("done")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(first, second), Gate: allowAll, Log: log, Stop: stop}
	_, err := Run(context.Background(), opts, "go")
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, second.ran, "the call after the stop does not start")

	opts.Stop = nil
	_, err = Run(context.Background(), opts, "")
	require.NoError(t, err)
	assert.Len(t, first.fakeTool.ran, 1)
	assert.Len(t, second.ran, 1, "resume runs the call the stop left")
	assert.Len(t, m.lastResults(t), 2)
}

func TestSteerAndFollowUp(t *testing.T) {
	m := &turnModel{responses: []llm.Response{say("", call("a", "ls", `{}`)), say("first answer"), say("second answer")}}
	var steered, followed bool
	log := &MemoryLog{}
	var events []string
	out, err := Run(context.Background(), Options{
		Model: m, Tools: tools.NewRegistry(&fakeTool{name: "ls", readOnly: true}), Gate: allowAll, Log: log,
		Steer: func() []string {
			if len(m.reqs) == 1 && !steered { // after the first step
				steered = true
				return []string{"also do X"}
			}
			return nil
		},
		FollowUp: func() []string {
			if !followed {
				followed = true
				return []string{"now do Y"}
			}
			return nil
		},
		Sink: func(ev Event) {
			if ev.Type == EventSteer {
				events = append(events, ev.Text)
			}
		},
	}, "go")
	require.NoError(t, err)
	assert.Equal(t, "second answer", out.Text)
	require.Len(t, m.reqs, 3)
	second := m.reqs[1].Messages
	assert.Equal(t, "also do X", second[len(second)-1].Text, "the steering message follows the step's results")
	third := m.reqs[2].Messages
	assert.Equal(t, "now do Y", third[len(third)-1].Text, "the follow-up is taken when the turn would end")
	assert.Equal(t, []string{"also do X"}, events)
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "steer", "assistant", "user", "assistant", "end"}, types(log.Entries()))
}

// toolFunc wraps a fakeTool with a side effect when it runs.
type toolFunc struct {
	*fakeTool
	run    func()
	ctxRun func(context.Context)
}

func (f toolFunc) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	if f.run != nil {
		f.run()
	}
	if f.ctxRun != nil {
		f.ctxRun(ctx)
	}
	return f.fakeTool.Run(ctx, args)
}
