package agent

import (
	"context"
	"fmt"

	"decode/session"
)

// Driver runs a command's turns in one session: one Run, or several that
// the core strings together (a plan and its fix, the steps of a plan and a
// re-plan, the turns of a replay). Its Outcome sums every model request
// it made.
type Driver interface {
	Turns(ctx context.Context, opts Options, p Progress, prompt string) (Outcome, error)
}

// DriverFunc is a Driver of one turn written as a function.
type DriverFunc func(ctx context.Context, opts Options, prompt string) (Outcome, error)

// Turns calls f.
func (f DriverFunc) Turns(ctx context.Context, opts Options, _ Progress, prompt string) (Outcome, error) {
	return f(ctx, opts, prompt)
}

// Progress receives what a command of several turns tells the person
// running it, besides the loop's events. Any field may be nil.
type Progress struct {
	// Say reports progress ("step 2 of 4: …"); a quiet command drops it.
	Say func(string)
	// Warn reports what went wrong without stopping the command.
	Warn func(string)
	// Turn is called before each turn that is not the command's first (a
	// plan step, a re-plan), so that a renderer starts it on a line of
	// its own.
	Turn func()
}

func (p Progress) say(format string, args ...any) {
	if p.Say != nil {
		p.Say(fmt.Sprintf(format, args...))
	}
}

func (p Progress) warn(format string, args ...any) {
	if p.Warn != nil {
		p.Warn(fmt.Sprintf(format, args...))
	}
}

func (p Progress) turn() {
	if p.Turn != nil {
		p.Turn()
	}
}

// Turns is what a command asks of the core: its driver, and what wraps
// any driver (the answer's schema, --remember).
type Turns struct {
	// Driver runs the command's turns; nil is one Run with the prompt.
	Driver Driver
	// Schema, when set, is the JSON Schema the final answer must be valid
	// against: an invalid answer is sent back once with what is wrong.
	Schema *ResponseSchema
	// Remember, when set, asks the model at the end of a successful
	// command for one sentence to keep in MEMORY.md.
	Remember *Remember
	// Progress receives the command's progress lines and warnings.
	Progress Progress
}

// RunTurns runs a command's turns in opts.Log and returns one Outcome that
// adds up the usage, requests and cost of every model request they made
// (plan, re-plan, plan steps, replay turns, the schema retry, the
// remember call). Its Status is how the command ended.
func RunTurns(ctx context.Context, opts Options, t Turns, prompt string) (Outcome, error) {
	var out Outcome
	var err error
	if t.Driver == nil {
		out, err = Run(ctx, opts, prompt)
	} else {
		out, err = t.Driver.Turns(ctx, opts, t.Progress, prompt)
	}
	if err == nil && t.Schema != nil {
		out, err = t.Schema.retry(ctx, opts, t.Progress, out)
	}
	if err == nil && t.Remember != nil {
		more := t.Remember.run(ctx, opts, t.Progress)
		more.Text = out.Text // the remember call's sentence is not the answer
		out = out.Add(more)
	}
	out.Status = StatusOf(err)
	return out, err
}

// closeTurns ends a command of several turns after its own entries (plan,
// plan_step). Each Run ends with an end entry, but a session's status is
// read from its last entry, so the command closes with one more; it
// carries no usage, turns or time, so totals summed over end entries stay
// right. A failure of the command's own (a plan that does not parse, a
// step that failed twice, an answer the schema refused twice) is recorded
// as an error first.
func closeTurns(ctx context.Context, opts Options, err error) error {
	ctx = context.WithoutCancel(ctx)
	var es []session.Entry
	status := StatusOf(err)
	if err != nil {
		if status != session.StatusLimit {
			status = session.StatusError
		}
		es = append(es, session.NewEntry(session.TypeError, session.ErrorData{Message: err.Error()}, string(status)))
	}
	code := status.ExitCode(false)
	es = append(es, session.NewEntry(session.TypeEnd, session.EndData{Status: status, Exit: code}, string(status)))
	if aerr := opts.Log.Append(ctx, es...); aerr != nil && err == nil {
		return fmt.Errorf("record session: %w", aerr)
	}
	return err
}
