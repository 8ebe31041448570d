// Package agent is decode's loop: it builds each request from the session,
// streams the model, gates and runs tools, and appends every step to the
// session before the next thing happens.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// Log is where the loop records the session. *session.Session implements
// it; MemoryLog serves --no-session runs.
type Log interface {
	Entries() []session.Entry
	Append(ctx context.Context, es ...session.Entry) error
}

// Gate decides whether a tool call may run. *tools.Gate implements it.
type Gate interface {
	Check(name string, readOnly bool, args json.RawMessage) tools.Verdict
}

// Approver asks a person about a call the gate sent to ask. It returns
// whether the call may run and, when not, the reason the model will see.
type Approver func(ctx context.Context, call llm.ToolCall, v tools.Verdict) (ok bool, reason string)

// Options wires one run of the loop.
type Options struct {
	Model  llm.Model
	Tools  *tools.Registry
	Gate   Gate
	Log    Log
	System string
	// MaxTurns caps the model requests of this run; 0 means no cap.
	MaxTurns int
	// Approve is asked when the gate says ask; nil denies with a reason.
	Approve Approver
	// Sink receives the run's events; nil drops them.
	Sink func(Event)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Start, when set, opens a new session: it is recorded before the prompt.
	Start *session.StartData
	// ExitCode maps the run's error to the exit code recorded in the end
	// entry; nil records 0 on success and 1 otherwise.
	ExitCode func(error) int

	// MaxSteps caps tool-call steps of this session; 0 means no cap.
	MaxSteps int
	// MaxCost caps the session's cost in USD, computed by Cost; 0 means no cap.
	MaxCost float64
	// Cost prices one response's usage for the model that answered; nil
	// means cost is unknown (and MaxCost cannot trigger).
	Cost func(model string, u llm.Usage) float64
	// OnAsk says what a headless run does when the gate says ask and there
	// is no Approve: "pause" (record an approval_request, exit 3) or "deny".
	OnAsk string
	// Steer returns messages queued for the running session (decode steer),
	// drained at step boundaries; FollowUp returns those queued for when the
	// turn would end. Either may be nil.
	Steer    func() []string
	FollowUp func() []string
	// ResponseSchema asks for a final answer that is JSON valid against it.
	ResponseSchema json.RawMessage
}

// Outcome summarises a finished run.
type Outcome struct {
	// Text is the final answer.
	Text  string
	Usage llm.Usage
	// Turns is the number of model requests made.
	Turns int
}

// ErrLimit is returned when a limit (turns, cost, time) stopped the run.
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

// Run continues the conversation in o.Log: when prompt is not empty it is
// appended as a user message first. It returns when the model answers
// without tool calls, a limit is reached, the context is cancelled, or the
// provider fails for good.
func Run(ctx context.Context, o Options, prompt string) (Outcome, error) {
	l := &loop{o: o, now: o.Now}
	if l.now == nil {
		l.now = time.Now
	}
	if o.Sink == nil {
		l.o.Sink = func(Event) {}
	}
	l.msgs = Messages(o.Log.Entries())
	start := l.now()
	if o.Start != nil {
		l.add(session.NewEntry(session.TypeStart, *o.Start, o.Start.Command+" "+o.Start.Model))
	}
	if prompt != "" {
		l.add(session.NewEntry(session.TypeUser, session.UserData{Text: prompt}, firstLine(prompt)))
		l.msgs = appendUser(l.msgs, prompt)
	}
	err := l.run(ctx)
	l.end(err, l.now().Sub(start))
	if ferr := l.flush(context.WithoutCancel(ctx)); ferr != nil && err == nil {
		err = ferr
	}
	return l.out, err
}

type loop struct {
	o       Options
	now     func() time.Time
	msgs    []llm.Message
	pending []session.Entry
	out     Outcome
}

func (l *loop) run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.o.MaxTurns > 0 && l.out.Turns >= l.o.MaxTurns {
			v := fmt.Sprintf("%d model requests; raise --max-turns", l.o.MaxTurns)
			l.add(session.NewEntry(session.TypeLimit, session.LimitData{Limit: "turns", Value: v}, "turns"))
			return &LimitError{Limit: "turns", Value: v}
		}
		resp, err := l.request(ctx)
		if err != nil {
			return err
		}
		if len(resp.Message.Calls) == 0 {
			l.out.Text = resp.Message.Text
			return nil
		}
		if err := l.runCalls(ctx, resp.Message.Calls); err != nil {
			return err
		}
	}
}

// request streams one model response and records it.
func (l *loop) request(ctx context.Context) (llm.Response, error) {
	if err := l.flush(ctx); err != nil {
		return llm.Response{}, err
	}
	req := llm.Request{System: l.o.System, Messages: l.msgs, Tools: l.o.Tools.Specs()}
	start := l.now()
	l.out.Turns++
	resp, err := l.stream(ctx, req)
	if err != nil {
		return resp, err
	}
	resp.Message.Role = llm.RoleAssistant
	l.msgs = append(l.msgs, resp.Message)
	l.out.Usage = l.out.Usage.Add(resp.Usage)
	l.add(session.NewEntry(session.TypeAssistant, session.AssistantData{
		Message: resp.Message, Usage: resp.Usage, Stop: resp.Stop, Model: resp.Model,
		Ms: l.now().Sub(start).Milliseconds(),
	}, assistantNote(resp.Message)))
	l.o.Sink(Event{Type: EventUsage, Usage: &resp.Usage})
	return resp, nil
}

// stream forwards a model stream to the sink and returns its response.
func (l *loop) stream(ctx context.Context, req llm.Request) (llm.Response, error) {
	for ev := range l.o.Model.Stream(ctx, req) {
		switch ev.Kind {
		case llm.EventText:
			l.o.Sink(Event{Type: EventText, Text: ev.Text})
		case llm.EventRetry:
			l.o.Sink(Event{Type: EventRetry, Err: ev.Err, Attempt: ev.Attempt})
		case llm.EventDone:
			if ev.Response.Stop == llm.StopMaxTokens && len(ev.Response.Message.Calls) == 0 {
				l.o.Sink(Event{Type: EventWarning, Text: "the model's answer was cut at its token limit"})
			}
			return *ev.Response, nil
		case llm.EventError:
			return llm.Response{}, l.fail(ev.Err)
		}
	}
	return llm.Response{}, l.fail(&llm.Error{Kind: llm.ErrTruncated, Provider: l.o.Model.Name(), Msg: "stream ended without a response"})
}

// fail records a provider failure in the session and returns it.
func (l *loop) fail(err error) error {
	kind := ""
	if e := llm.AsError(err); e != nil {
		kind = string(e.Kind)
	}
	if !errors.Is(err, context.Canceled) {
		l.add(session.NewEntry(session.TypeError, session.ErrorData{Kind: kind, Message: err.Error()}, kind))
	}
	return err
}

// end records how the run ended.
func (l *loop) end(err error, d time.Duration) {
	status, code := "done", 0
	switch {
	case err == nil:
	case errors.Is(err, ErrLimit):
		status = "limit"
	case errors.Is(err, context.Canceled):
		status = "interrupted"
		l.add(session.NewEntry(session.TypeInterrupted, session.InterruptedData{Reason: "cancelled by a signal"}, "interrupted"))
	default:
		status = "error"
	}
	if err != nil {
		code = 1
		if l.o.ExitCode != nil {
			code = l.o.ExitCode(err)
		}
	}
	l.add(session.NewEntry(session.TypeEnd, session.EndData{
		Status: status, Exit: code, Usage: l.out.Usage, Turns: l.out.Turns, Ms: d.Milliseconds(),
	}, status))
}

// add queues an entry for the next flush.
func (l *loop) add(e session.Entry) { l.pending = append(l.pending, e) }

// flush commits the queued entries as one batch.
func (l *loop) flush(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	es := l.pending
	l.pending = nil
	if err := l.o.Log.Append(ctx, es...); err != nil {
		return fmt.Errorf("record session: %w", err)
	}
	return nil
}

func assistantNote(m llm.Message) string {
	if len(m.Calls) == 0 {
		return firstLine(m.Text)
	}
	names := ""
	for i, c := range m.Calls {
		if i > 0 {
			names += ", "
		}
		names += c.Name
	}
	return "calls " + names
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, 72)
}
