package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"decode/session"
)

// Plan is decode plan's turns: the planning turn explores with the tools
// the options allow and answers with a numbered plan; an answer that is
// not one is sent back once with what is wrong, and a second ends the
// command with an error. The plan is recorded as a plan entry, which
// PlanExec carries out.
type Plan struct {
	// Planned receives the plan's text once it is recorded.
	Planned func(text string)
}

// Turns implements Driver.
func (pl Plan) Turns(ctx context.Context, opts Options, _ Progress, task string) (Outcome, error) {
	out, err := Run(ctx, opts, task)
	if err != nil {
		return out, err
	}
	steps, perr := parsePlan(out.Text, planAnswerRules)
	if perr != nil {
		opts.Start, opts.Respec = nil, nil
		more, err := Run(ctx, opts, fixPlanPrompt(perr))
		out = out.Add(more)
		if err != nil {
			return out, err
		}
		if steps, perr = parsePlan(out.Text, planAnswerRules); perr != nil {
			err := fmt.Errorf("the model's answer is not a usable plan, even after it was told what was wrong: %v", perr)
			return out, closeTurns(ctx, opts, err)
		}
	}
	plan := session.PlanData{Task: task, Steps: steps}
	if err := opts.Log.Append(ctx, session.NewEntry(session.TypePlan, plan, fmt.Sprintf("plan of %d steps", len(steps)))); err != nil {
		return out, fmt.Errorf("record plan: %w", err)
	}
	if err := closeTurns(ctx, opts, nil); err != nil {
		return out, err
	}
	if pl.Planned != nil {
		pl.Planned(out.Text)
	}
	return out, nil
}

// fixPlanPrompt sends a malformed plan back to the model.
func fixPlanPrompt(problem error) string {
	return "That answer is not a usable plan: " + problem.Error() + ".\n" +
		"Answer again with only the plan: a numbered list of 3 to 8 steps, each saying what to change, " +
		"then \"Files:\" with the files it touches and \"Verify:\" with how to check it, like:\n" +
		"1. Add retry with backoff to Client.Do. Files: client.go, client_test.go. Verify: go test ./client"
}

// PlanExec carries out a plan in one session: each step is a user turn
// that ends with a line STEP DONE or STEP FAILED: reason, recorded as a
// plan_step entry. The first step the model says failed is sent back with
// its reason for replacement steps for the rest of the plan; a second
// failure stops the run. A step stopped by a limit (turns, steps, cost,
// time) fails too, but stops the run at once: limits hold for the whole
// session, so a re-plan would only hit it again. A new session (opts.Start
// set) opens with the plan it carries out.
type PlanExec struct {
	Plan session.PlanData
}

// Turns implements Driver.
func (x PlanExec) Turns(ctx context.Context, opts Options, p Progress, _ string) (Outcome, error) {
	e := &planExec{plan: x.Plan, p: p}
	e.plan.Steps = append([]session.PlanStep(nil), x.Plan.Steps...)
	return e.run(ctx, opts)
}

// planExec is one carrying out of a plan.
type planExec struct {
	plan      session.PlanData
	p         Progress
	replanned bool
}

// stepFailedError is a plan step that failed after the plan was already
// re-planned once, or that a limit stopped.
type stepFailedError struct {
	step   session.PlanStep
	of     int
	reason string
	// cause is the limit that stopped the step, if one did.
	cause error
}

func (e *stepFailedError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("plan step %d of %d (%q) stopped: %s", e.step.N, e.of, clipText(e.step.Text, 80), e.reason)
	}
	return fmt.Sprintf("plan step %d of %d failed after the plan was re-planned once (%q): %s",
		e.step.N, e.of, clipText(e.step.Text, 80), e.reason)
}

func (e *stepFailedError) Unwrap() error { return e.cause }

func (x *planExec) run(ctx context.Context, opts Options) (Outcome, error) {
	if opts.Start != nil {
		err := opts.Log.Append(ctx,
			session.NewEntry(session.TypeStart, *opts.Start, opts.Start.Command+" "+opts.Start.Model),
			session.NewEntry(session.TypePlan, x.plan, "plan from "+x.plan.From))
		if err != nil {
			return Outcome{}, fmt.Errorf("record session: %w", err)
		}
		opts.Start, opts.Respec = nil, nil
	}
	var total Outcome
	for i := 0; i < len(x.plan.Steps); i++ {
		step, of := x.plan.Steps[i], len(x.plan.Steps)
		x.p.say("step %d of %d: %s", step.N, of, clipText(step.Text, 100))
		x.p.turn()
		out, err := Run(ctx, opts, x.stepPrompt(i))
		total = total.Add(out)
		res := readStepResult(out.Text)
		switch {
		case errors.Is(err, ErrLimit):
			res = stepResult{failed: true, marked: true, note: err.Error()}
		case err != nil:
			return total, err // a provider failure or an interrupt stops the run as it would any run
		case !res.marked:
			x.p.warn("step %d of %d ended without STEP DONE or STEP FAILED; taken as done", step.N, of)
		}
		if err := x.record(ctx, opts, step.N, res); err != nil {
			return total, err
		}
		if !res.failed {
			continue
		}
		if x.replanned || err != nil {
			return total, closeTurns(ctx, opts, &stepFailedError{step: step, of: of, reason: res.note, cause: err})
		}
		x.p.warn("step %d of %d failed: %s; asking the model to re-plan the rest", step.N, of, res.note)
		more, err := x.replan(ctx, opts, i, res.note)
		total = total.Add(more)
		if err != nil {
			return total, err
		}
		i-- // step i is now the first replacement step
	}
	return total, closeTurns(ctx, opts, nil)
}

// record appends the plan_step entry of a finished step.
func (x *planExec) record(ctx context.Context, opts Options, n int, res stepResult) error {
	status := "done"
	if res.failed {
		status = "failed"
	}
	e := session.NewEntry(session.TypePlanStep, session.PlanStepData{N: n, Status: status, Note: res.note},
		fmt.Sprintf("step %d %s", n, status))
	if err := opts.Log.Append(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("record session: %w", err)
	}
	if !res.failed {
		x.p.say("step %d of %d done", n, len(x.plan.Steps))
	}
	return nil
}

// replan sends step i's failure to the model and replaces the plan's
// steps from i on with the steps it answers; the revised plan is recorded.
// An answer that does not parse ends the run.
func (x *planExec) replan(ctx context.Context, opts Options, i int, reason string) (Outcome, error) {
	x.replanned = true
	step, of := x.plan.Steps[i], len(x.plan.Steps)
	prompt := fmt.Sprintf("Step %d of %d failed: %s\n\n"+
		"Re-plan the rest of the task: answer with only a numbered list of 1 to 8 steps that replace steps %d to %d, "+
		"each saying what to do, then \"Files:\" and \"Verify:\" as in the plan. Do not carry them out yet; "+
		"I will send them one at a time.", step.N, of, reason, step.N, of)
	x.p.turn()
	out, err := Run(ctx, opts, prompt)
	if err != nil {
		return out, err
	}
	steps, perr := parsePlan(out.Text, replanRules)
	if perr != nil {
		err := fmt.Errorf("plan step %d of %d failed (%s) and the model's re-plan is not usable: %v", step.N, of, reason, perr)
		return out, closeTurns(ctx, opts, err)
	}
	revised := append([]session.PlanStep(nil), x.plan.Steps[:i]...)
	for _, s := range steps {
		s.N = len(revised) + 1
		revised = append(revised, s)
	}
	x.plan.Steps, x.plan.Replan = revised, step.N
	e := session.NewEntry(session.TypePlan, x.plan, fmt.Sprintf("re-plan from step %d", step.N))
	if err := opts.Log.Append(ctx, e); err != nil {
		return out, fmt.Errorf("record session: %w", err)
	}
	return out, nil
}

// stepPrompt is the user turn of step i: the first also carries the task
// and the whole plan. It states the contract readStepResult reads.
func (x *planExec) stepPrompt(i int) string {
	var b strings.Builder
	steps := x.plan.Steps
	if i == 0 && !x.replanned {
		b.WriteString("Carry out this plan one step at a time; I will send each step as its own message.\n\n")
		if t := strings.TrimSpace(x.plan.Task); t != "" {
			b.WriteString("Task: " + t + "\n\n")
		}
		b.WriteString("Plan:\n")
		for _, s := range steps {
			b.WriteString(formatStep(s) + "\n")
		}
		b.WriteString("\n")
	}
	s := steps[i]
	fmt.Fprintf(&b, "Step %d of %d: %s\n", s.N, len(steps), s.Text)
	if len(s.Files) > 0 {
		b.WriteString("Files: " + strings.Join(s.Files, ", ") + "\n")
	}
	if s.Verify != "" {
		b.WriteString("Verify: " + s.Verify + "\n")
	}
	b.WriteString("\nDo this step only, and check it as Verify says. End your reply with a last line " +
		"\"STEP DONE\", or \"STEP FAILED: <reason>\" if you could not complete it.")
	return b.String()
}
