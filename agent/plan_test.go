package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
)

const threeSteps = "1. Change the greeting. Files: greeting.txt. Verify: cat greeting.txt\n" +
	"2. Add a test. Files: greeting_test.sh. Verify: sh greeting_test.sh\n" +
	"3. Mention it in the README. Files: README.md. Verify: grep -q Bonjour README.md\n"

// entryTypes lists the types of a log's entries after the first n.
func entryTypes(log Log, from int) []string {
	var out []string
	for _, e := range log.Entries()[from:] {
		out = append(out, e.Type)
	}
	return out
}

func TestPlanFixSumsEveryRequest(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("Just change the greeting."), say(threeSteps)}}
	log := &MemoryLog{}
	var planned string
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{
		Driver: Plan{Planned: func(text string) { planned = text }},
	}, "greet in French")
	require.NoError(t, err)
	assertSummed(t, out, 2)
	assert.Equal(t, threeSteps, planned, "the plan that parsed is handed to the command")
	require.Len(t, m.reqs, 2)
	assert.Contains(t, m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Text, "no numbered steps found", "the fix says what was wrong")

	es := log.Entries()
	var plan session.PlanData
	var found bool
	for _, e := range es {
		if e.Type == session.TypePlan {
			require.NoError(t, e.Decode(&plan))
			found = true
		}
	}
	require.True(t, found, "the plan is recorded")
	assert.Equal(t, "greet in French", plan.Task)
	assert.Len(t, plan.Steps, 3)
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type, "the command closes after its plan entry")
}

func TestPlanTwiceMalformedFails(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("No plan."), say("Still none.")}}
	log := &MemoryLog{}
	called := false
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{Driver: Plan{Planned: func(string) { called = true }}}, "task")
	require.ErrorContains(t, err, "not a usable plan, even after it was told what was wrong")
	assertSummed(t, out, 2)
	assert.Equal(t, session.StatusError, out.Status)
	assert.False(t, called, "no plan to print")
	es := log.Entries()
	assert.Equal(t, []string{session.TypeError, session.TypeEnd}, entryTypes(log, len(es)-2))
}

func TestPlanExecReplanSumsEveryRequest(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{
		say("Looked.\nSTEP DONE"),
		say("Tried.\nSTEP FAILED: the file is missing"),
		say("1. Create the file first. Files: a.txt. Verify: test -f a.txt"),
		say("Created.\nSTEP DONE"),
	}}
	log := &MemoryLog{}
	opts := turnsOptions(m, log)
	opts.Start = &session.StartData{Command: "run", Model: "fake:model"}
	var said, warned []string
	turns := 0
	plan := session.PlanData{From: "file plan.md", Steps: []session.PlanStep{{N: 1, Text: "Look."}, {N: 2, Text: "Change a.txt."}}}
	out, err := RunTurns(context.Background(), opts, Turns{
		Driver: PlanExec{Plan: plan},
		Progress: Progress{
			Say:  func(s string) { said = append(said, s) },
			Warn: func(s string) { warned = append(warned, s) },
			Turn: func() { turns++ },
		},
	}, "")
	require.NoError(t, err)
	assertSummed(t, out, 4)
	assert.Equal(t, 4, turns, "three steps and the re-plan each start a turn")
	assert.Equal(t, []string{"step 1 of 2: Look.", "step 1 of 2 done", "step 2 of 2: Change a.txt.", "step 2 of 2: Create the file first.", "step 2 of 2 done"}, said)
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], "step 2 of 2 failed: the file is missing; asking the model to re-plan the rest")
	assert.Len(t, plan.Steps, 2, "the caller's plan is not changed")

	es := log.Entries()
	require.GreaterOrEqual(t, len(es), 2)
	assert.Equal(t, []string{session.TypeStart, session.TypePlan}, entryTypes(log, 0)[:2], "a new session opens with its plan")
	var steps []string
	var replans int
	for _, e := range es {
		switch e.Type {
		case session.TypePlanStep:
			var d session.PlanStepData
			require.NoError(t, e.Decode(&d))
			steps = append(steps, d.Status)
		case session.TypePlan:
			var d session.PlanData
			require.NoError(t, e.Decode(&d))
			if d.Replan > 0 {
				replans++
				assert.Equal(t, 2, d.Replan)
				assert.Equal(t, "Create the file first.", d.Steps[1].Text)
			}
		}
	}
	assert.Equal(t, []string{"done", "failed", "done"}, steps)
	assert.Equal(t, 1, replans, "the revised plan is recorded")
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type)
}

func TestPlanExecSecondFailureStops(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{
		say("STEP FAILED: no"),
		say("1. Try another way."),
		say("STEP FAILED: still no"),
	}}
	log := &MemoryLog{}
	plan := session.PlanData{Steps: []session.PlanStep{{N: 1, Text: "Do it."}}}
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{Driver: PlanExec{Plan: plan}}, "")
	var sf *stepFailedError
	require.ErrorAs(t, err, &sf)
	assert.Contains(t, err.Error(), "failed after the plan was re-planned once")
	assertSummed(t, out, 3)
	assert.Equal(t, session.StatusError, out.Status)
	es := log.Entries()
	assert.Equal(t, []string{session.TypeError, session.TypeEnd}, entryTypes(log, len(es)-2))
}

func TestPlanExecLimitStopsWithoutReplan(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("looking", call("c1", "read", `{}`)), say("more")}}
	log := &MemoryLog{}
	opts := turnsOptions(m, log)
	opts.MaxTurns = 1
	plan := session.PlanData{Steps: []session.PlanStep{{N: 1, Text: "Do it."}, {N: 2, Text: "Then this."}}}
	_, err := RunTurns(context.Background(), opts, Turns{Driver: PlanExec{Plan: plan}}, "")
	require.ErrorIs(t, err, ErrLimit, "a limit stops the plan at once")
	assert.Contains(t, err.Error(), "plan step 1 of 2")
	assert.Len(t, m.reqs, 1, "no re-plan after a limit")
}
