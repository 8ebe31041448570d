package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"decode/agent/llm"
	"decode/session"
)

// ErrLimit is returned when a limit (turns, steps, cost, time) stopped the run.
var ErrLimit = errors.New("limit reached")

// LimitError says which limit stopped the run.
type LimitError struct {
	Limit string
	Value string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s limit reached (%s)", e.Limit, e.Value)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// budget is what a task has spent. A task is the run that got a prompt
// and every resume that continues it without a new one (after a pause, a
// crash, a stop or a limit); it is counted from the log, so a limit holds
// across processes and machines.
type budget struct {
	turns  int           // model responses
	steps  int           // model responses with tool calls
	cost   float64       // USD, when the model's price is known
	active time.Duration // wall time
}

// spentIn counts what the session's current task has spent. The log is cut
// into runs at end entries; a run that recorded a prompt before its first
// model response started the task. A run's wall time is its end entry's,
// or for one that died without an end, its first entry to its last.
func spentIn(entries []session.Entry, cost func(string, llm.Usage) float64) budget {
	var total, run budget
	var first, last time.Time
	answered, prompted := false, false
	for _, e := range entries {
		switch e.Type {
		case session.TypeApproval:
			continue // written by decode approve, not by a run
		case session.TypeUser:
			if !answered && !prompted {
				prompted, total = true, budget{}
			}
		case session.TypeAssistant:
			var d session.AssistantData
			if e.Decode(&d) != nil {
				break
			}
			answered = true
			run.turns++
			if len(d.Message.Calls) > 0 {
				run.steps++
			}
			c := d.Cost
			if c == 0 && cost != nil {
				c = cost(d.Model, d.Usage)
			}
			run.cost += c
		case session.TypeCompaction:
			var d session.CompactionData
			if e.Decode(&d) != nil {
				break
			}
			if d.Spent == nil {
				run.cost += d.Cost // a summarising call costs like any other
				break
			}
			// What the task had spent, this run's part included: the
			// entries before may not have been read (session.OpenTail).
			total = budget{turns: d.Spent.Turns, steps: d.Spent.Steps, cost: d.Spent.Cost, active: time.Duration(d.Spent.Ms) * time.Millisecond}
			run, prompted, answered = budget{}, !d.Spent.Manual, !d.Spent.Manual
			first = time.Time{} // a run's wall time must not span unread entries
			continue
		case session.TypeEnd:
			var d session.EndData
			if e.Decode(&d) == nil {
				run.active = time.Duration(d.Ms) * time.Millisecond
			}
			total = total.add(run)
			run, first, last, answered, prompted = budget{}, time.Time{}, time.Time{}, false, false
			continue
		}
		if first.IsZero() {
			first = e.TS
		}
		last = e.TS
	}
	if last.After(first) {
		run.active = last.Sub(first)
	}
	return total.add(run)
}

func (b budget) add(o budget) budget {
	return budget{turns: b.turns + o.turns, steps: b.steps + o.steps, cost: b.cost + o.cost, active: b.active + o.active}
}

// checkLimits records a limit entry and returns its error when the session
// has spent one of its budgets; it runs before every model request.
func (l *loop) checkLimits() error {
	s, o := l.spent, l.o
	var limit, value string
	switch active := s.active + l.now().Sub(l.start); {
	case o.MaxTurns > 0 && s.turns >= o.MaxTurns:
		limit, value = "turns", fmt.Sprintf("%d model requests", s.turns)
	case o.MaxSteps > 0 && s.steps >= o.MaxSteps:
		limit, value = "steps", fmt.Sprintf("%d tool-call steps", s.steps)
	case o.MaxCost > 0 && s.cost >= o.MaxCost:
		limit, value = "cost", fmt.Sprintf("$%.4f spent of $%s", s.cost, strconv.FormatFloat(o.MaxCost, 'f', -1, 64))
	case o.Timeout > 0 && active >= o.Timeout:
		limit, value = "time", fmt.Sprintf("%s of %s", active.Round(time.Millisecond), o.Timeout)
	default:
		return nil
	}
	return l.limit(limit, value)
}

func (l *loop) limit(limit, value string) error {
	l.add(session.NewEntry(session.TypeLimit, session.LimitData{Limit: limit, Value: value}, limit))
	return &LimitError{Limit: limit, Value: value}
}

// deadline bounds the run by what is left of Timeout, so that a request or
// a tool still running when the time is up is stopped.
func (l *loop) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.o.Timeout <= 0 {
		return ctx, func() {}
	}
	// The deadline is on the real clock, whatever clock Options.Now is.
	return context.WithTimeout(ctx, l.o.Timeout-l.spent.active)
}

// timedOut turns the run's deadline passing into the time limit.
func (l *loop) timedOut(parent, ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrLimit) || parent.Err() != nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	active := l.spent.active + l.now().Sub(l.start)
	return l.limit("time", fmt.Sprintf("%s of %s", active.Round(time.Millisecond), l.o.Timeout))
}
