// Package agent is decode's loop: it builds each request from the session,
// streams the model, gates and runs tools, and appends every step to the
// session before the next thing happens.
package agent

import (
	"bytes"
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

// Approver asks a person about a call the gate sent to ask.
type Approver func(ctx context.Context, call llm.ToolCall, v tools.Verdict) Approval

// Approval is a person's answer about one call.
type Approval struct {
	// OK lets the call run.
	OK bool
	// Reason is what the model is told when OK is false ("" for a plain
	// no): the person's own words, so the model can adapt.
	Reason string
	// Always, with OK, is an allow rule the person gave for calls like
	// this one for the rest of the session (bash(go test ./...)): the loop
	// adds it to the gate and records it in the session as a change of
	// the run spec, so a resume keeps it too.
	Always string
}

// Options wires one run of the loop.
type Options struct {
	Model  llm.Model
	Tools  *tools.Registry
	Gate   Gate
	Log    Log
	System string
	// MaxTurns caps the model requests of the task; 0 means no cap. This and
	// the other limits count what the log records since the task's prompt,
	// so they hold across resumes.
	MaxTurns int
	// Approve is asked when the gate says ask; nil means no one is at a
	// terminal (a headless run): see OnAsk.
	Approve Approver
	// VerifyDecision authenticates a recorded approval, denial or answer
	// (its MAC or SSH signature) before a resume acts on it; an error
	// refuses the resume. nil checks only that the decision's hash matches
	// the call.
	VerifyDecision func(d session.ApprovalData, call llm.ToolCall) error
	// Sink receives the run's events; nil drops them.
	Sink func(Event)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Start, when set, opens a new session: it is recorded before the prompt.
	Start *session.StartData
	// Respec, when set, records that this run's flags changed the
	// session's run spec, before the prompt. A command of several runs
	// records it (and Start) with its first.
	Respec *session.SpecData

	// MaxSteps caps the task's tool-call steps; 0 means no cap.
	MaxSteps int
	// MaxCost caps the task's cost in USD, computed by Cost; 0 means no cap.
	MaxCost float64
	// Cost prices one response's usage for the model that answered; nil
	// means cost is unknown (and MaxCost cannot trigger).
	Cost func(model string, u llm.Usage) float64
	// OnAsk says what a headless run does when the gate says ask and there
	// is no Approve: "pause" (the default: record an approval_request and
	// return ErrPaused) or "deny" (deny with a reason the model sees).
	OnAsk string
	// AllowHint, when set, ends the reason the model sees for a call
	// denied because no one could approve it: how the user can allow such
	// calls, in the words of whoever runs the loop (the CLI names its
	// flags; the loop names none).
	AllowHint string
	// Steer returns messages queued for the running session (decode steer),
	// drained at step boundaries; FollowUp returns those queued for when the
	// turn would end. Either may be nil.
	Steer    func() []string
	FollowUp func() []string
	// ResponseSchema asks for a final answer that is JSON valid against it.
	ResponseSchema json.RawMessage

	// Timeout caps the task's wall time across its runs; 0 means no cap.
	Timeout time.Duration
	// Stop is closed to ask the run to stop at its next step boundary (the
	// first SIGINT); cancelling ctx stops it at once. Nil never closes.
	Stop <-chan struct{}
	// Hooks run at the loop's events; nil runs none.
	Hooks *Hooks
	// Snapshots records the work tree around calls that may change files;
	// nil takes none.
	Snapshots Snapshotter
	// Compaction says when and how the context is compacted.
	Compaction CompactOptions
	// Attach holds files attached to the prompt (-f); the first run given
	// a prompt records them with it, so a command of several runs (a plan
	// and its re-plan, a schema retry) sends them once. Nil attaches none.
	Attach *Attached
}

// Outcome summarises a finished run.
type Outcome struct {
	// Text is the final answer.
	Text  string
	Usage llm.Usage
	// Turns is the number of model requests made.
	Turns int
	// Cost is this run's cost in USD as priced by Options.Cost; 0 when
	// Cost is nil or the model's price is unknown.
	Cost float64
	// Status is how the run ended, as its end entry records it.
	Status session.Status
}

// Add sums a later run of the same command into o: usage, requests and
// cost add up; the answer and the status are the later run's. Every
// command of several runs (plan, re-plan, plan steps, schema retries,
// replay turns) totals its outcome with it.
func (o Outcome) Add(b Outcome) Outcome {
	return Outcome{Text: b.Text, Usage: o.Usage.Add(b.Usage), Turns: o.Turns + b.Turns, Cost: o.Cost + b.Cost, Status: b.Status}
}

// Run continues the conversation in o.Log. It first settles what the
// session left open: the calls of a paused or interrupted response get
// exactly one result each (a decided approval runs or is refused, a call
// whose result was lost is reported as interrupted, a read-only one runs
// again). Then, when prompt is not empty, it is appended as a user message.
// It returns when the model answers without tool calls, the run pauses
// (ErrPaused), a limit is reached (ErrLimit), it is stopped or cancelled,
// or the provider fails for good.
func Run(ctx context.Context, o Options, prompt string) (Outcome, error) {
	l := &loop{o: o, now: o.Now}
	if l.now == nil {
		l.now = time.Now
	}
	if o.Sink == nil {
		l.o.Sink = func(Event) {}
	}
	entries := o.Log.Entries()
	rememberFiles(o.Tools, entries)
	var open *turn
	l.msgs, open = history(entries, l.sid())
	if t, ok := o.Log.(tornLog); ok && t.TornTail() && open != nil {
		open.mayHaveRun()
	}
	if _, d := lastCompaction(entries); d.FoldedAssistant > 0 {
		l.folded = d.FoldedAssistant
	}
	if prompt == "" {
		l.spent = spentIn(entries, o.Cost) // a resume continues the task's budget
	}
	l.start = l.now()
	parent := ctx
	ctx, cancel := l.deadline(ctx)
	defer cancel()
	if o.Start != nil {
		l.add(session.NewEntry(session.TypeStart, *o.Start, o.Start.Command+" "+o.Start.Model))
	}
	if o.Respec != nil {
		l.add(session.NewEntry(session.TypeSpec, *o.Respec, specNote(o.Respec.Changes)))
	}
	l.notify(ctx, HookEvent{Event: HookRunStart, Prompt: prompt})
	err := l.begin(ctx, prompt, open)
	if err == nil {
		err = l.run(ctx)
	}
	err = l.timedOut(parent, ctx, err)
	l.end(err, l.now().Sub(l.start))
	if ferr := l.flush(context.WithoutCancel(ctx)); ferr != nil && err == nil {
		err = ferr
	}
	l.ended = true
	l.out.Status = StatusOf(err)
	l.notify(ctx, HookEvent{Event: HookRunEnd, Status: string(l.out.Status), Exit: exitCode(err)})
	return l.out, err
}

// specNote names a spec entry's changes for its commit message.
func specNote(changes []session.SpecChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// tornLog is a log that can tell when lines after its last readable entry
// were lost (*session.Session): what they recorded may have happened.
type tornLog interface {
	TornTail() bool
}

// rememberFiles tells the tools which files the session read or wrote
// before this run, from its tool results: a file read before a pause
// still counts as read after the resume, unless it changed since.
func rememberFiles(reg *tools.Registry, entries []session.Entry) {
	if reg == nil {
		return
	}
	var seen []tools.FileSeen
	for _, e := range entries {
		if e.Type != session.TypeToolResult || !bytes.Contains(e.Data, []byte(`"seen"`)) {
			continue
		}
		var d session.ToolResultData
		if e.Decode(&d) != nil {
			continue
		}
		for _, f := range d.Seen {
			seen = append(seen, tools.FileSeen{Path: f.Path, Mod: f.Mod, Size: f.Size})
		}
	}
	if len(seen) > 0 {
		reg.Remember(seen)
	}
}

type loop struct {
	o       Options
	now     func() time.Time
	msgs    []llm.Message
	pending []session.Entry
	out     Outcome
	start   time.Time
	// spent is the session's budget used so far, this run included.
	spent budget
	// changed is set once the run records anything but its end.
	changed bool
	// superseded is set while settling an open turn when a new prompt came
	// with the resume: what still waits for a person is answered by it.
	superseded bool
	// sentBack counts the times before_finish hooks sent the model back.
	sentBack int
	ended    bool
	snaps    *snapState
	// fatal is set when the session could not be recorded before a tool
	// ran: the run stops before any further tool runs.
	fatal error
	// est estimates the next request's size; folded counts the model
	// responses compaction took out of the context; compactions counts
	// compactions since the last model response.
	est         estimator
	folded      int
	compactions int
}

// maxSentBack caps how often before_finish hooks may send the model back
// to work in one run, so a hook that always objects cannot loop forever.
const maxSentBack = 10

// begin settles the turn the session left open and appends the prompt.
func (l *loop) begin(ctx context.Context, prompt string, open *turn) error {
	if open != nil {
		if err := checkDecisions(open, l.o.VerifyDecision); err != nil {
			return err
		}
		l.superseded = prompt != ""
		err := l.runCalls(ctx, open.calls, open)
		l.superseded = false
		if err != nil {
			return err
		}
	}
	if prompt != "" {
		files := l.o.Attach.take()
		l.add(session.NewEntry(session.TypeUser, session.UserData{Text: prompt, Attachments: files}, firstLine(prompt)))
		l.msgs = appendUser(l.msgs, prompt, session.Images(files)...)
		return nil
	}
	l.drain(l.o.Steer, session.TypeSteer)
	if !awaitsModel(l.msgs) {
		return errors.New("the session has nothing to continue: its last turn is complete; give a prompt")
	}
	return nil
}

func (l *loop) run(ctx context.Context) error {
	for {
		if err := l.boundary(ctx); err != nil {
			return err
		}
		resp, err := l.request(ctx)
		if err != nil {
			return err
		}
		if len(resp.Message.Calls) == 0 {
			l.out.Text = resp.Message.Text
			if l.finishing(ctx, resp.Message.Text) {
				continue
			}
			return nil
		}
		l.spent.steps++
		if err := l.runCalls(ctx, resp.Message.Calls, nil); err != nil {
			return err
		}
	}
}

// errStopped ends a run stopped at a step boundary (the first SIGINT); it
// is a cancellation, so it maps to the same exit code.
var errStopped = fmt.Errorf("stopped at a step boundary: %w", context.Canceled)

// stopping reports whether the run was asked to stop at its next boundary.
func (l *loop) stopping() bool {
	select {
	case <-l.o.Stop:
		return true
	default:
		return false
	}
}

// boundary is what happens between steps: a stop request ends the run,
// steering messages are taken, limits are checked, before_request hooks run.
func (l *loop) boundary(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.stopping() {
		return errStopped
	}
	l.drain(l.o.Steer, session.TypeSteer)
	if err := l.checkLimits(); err != nil {
		return err
	}
	l.notify(ctx, HookEvent{Event: HookBeforeRequest, Turn: l.spent.turns})
	return nil
}

// finishing runs when the model answered without calls: steering and
// follow-up messages queued meanwhile, or before_finish hooks, send it
// back to work. It reports whether they did.
func (l *loop) finishing(ctx context.Context, text string) bool {
	n := len(l.msgs)
	l.drain(l.o.Steer, session.TypeSteer)
	l.drain(l.o.FollowUp, session.TypeUser)
	if len(l.msgs) > n {
		return true
	}
	msgs := l.beforeFinish(ctx, text)
	if len(msgs) == 0 {
		return false
	}
	if l.sentBack >= maxSentBack {
		l.o.Sink(Event{Type: EventWarning, Text: fmt.Sprintf("before_finish hooks sent the model back %d times; finishing anyway", l.sentBack)})
		return false
	}
	l.sentBack++
	for _, m := range msgs {
		l.say(session.TypeUser, m)
	}
	return true
}

// drain appends the messages next returns as entries of type typ.
func (l *loop) drain(next func() []string, typ string) {
	if next == nil {
		return
	}
	for _, m := range next() {
		if strings.TrimSpace(m) != "" {
			l.say(typ, m)
		}
	}
}

// say records a user message (or a steering one) and adds it to the context.
func (l *loop) say(typ, text string) {
	l.add(session.NewEntry(typ, session.UserData{Text: text}, firstLine(text)))
	l.msgs = appendUser(l.msgs, text)
	if typ == session.TypeSteer {
		l.o.Sink(Event{Type: EventSteer, Text: text})
	}
}

// request streams one model response and records it. A request whose
// estimate passes the threshold compacts the context first; one the
// provider refuses as too long compacts it and is sent once more.
func (l *loop) request(ctx context.Context) (llm.Response, error) {
	if err := l.flush(ctx); err != nil {
		return llm.Response{}, err
	}
	if l.overLimit() {
		if err := l.compact(ctx, TriggerThreshold, "", ""); err != nil {
			return llm.Response{}, l.fail(ctx, err)
		}
	}
	start := l.now()
	l.out.Turns++
	l.spent.turns++
	resp, err := l.stream(ctx, l.newRequest())
	if tooLong(err) && ctx.Err() == nil {
		if cerr := l.compact(ctx, TriggerOverflow, "", err.Error()); cerr != nil {
			return resp, l.fail(ctx, cerr)
		}
		resp, err = l.stream(ctx, l.newRequest())
	}
	if err != nil {
		return resp, l.fail(ctx, err)
	}
	l.compactions = 0
	resp.Message.Role = llm.RoleAssistant
	l.msgs = append(l.msgs, resp.Message)
	l.est.observe(resp.Usage, len(l.msgs))
	l.out.Usage = l.out.Usage.Add(resp.Usage)
	var cost float64
	if l.o.Cost != nil {
		cost = l.o.Cost(resp.Model, resp.Usage)
		l.out.Cost += cost
		l.spent.cost += cost
	}
	l.add(session.NewEntry(session.TypeAssistant, session.AssistantData{
		Message: resp.Message, Usage: resp.Usage, Stop: resp.Stop, Model: resp.Model,
		Ms: l.now().Sub(start).Milliseconds(), Cost: cost,
	}, assistantNote(resp.Message)))
	l.o.Sink(Event{Type: EventUsage, Usage: &resp.Usage})
	return resp, nil
}

// newRequest is the request for the next step.
func (l *loop) newRequest() llm.Request {
	return llm.Request{System: l.o.System, Messages: l.msgs, Tools: l.o.Tools.Specs(), ResponseSchema: l.o.ResponseSchema, Folded: l.folded}
}

// stream forwards a model stream to the sink and returns its response, or
// the error that ended it.
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
			return llm.Response{}, ev.Err
		}
	}
	return llm.Response{}, &llm.Error{Kind: llm.ErrTruncated, Provider: l.o.Model.Name(), Msg: "stream ended without a response"}
}

// fail records a provider failure in the session and returns it; a
// request ended by a stop or the time limit is recorded as such instead.
func (l *loop) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	kind := ""
	if e := llm.AsError(err); e != nil {
		kind = string(e.Kind)
	}
	if !errors.Is(err, context.Canceled) {
		l.add(session.NewEntry(session.TypeError, session.ErrorData{Kind: kind, Message: err.Error()}, kind))
	}
	return err
}

// end records how the run ended. A resume that found the session still
// waiting and did nothing records nothing.
func (l *loop) end(err error, d time.Duration) {
	st := StatusOf(err)
	if st == session.StatusPaused && !l.changed {
		return
	}
	switch {
	case errors.Is(err, errStopped):
		l.add(session.NewEntry(session.TypeInterrupted, session.InterruptedData{Reason: "stopped at a step boundary by a signal"}, "interrupted"))
	case st == session.StatusInterrupted:
		l.add(session.NewEntry(session.TypeInterrupted, session.InterruptedData{Reason: "cancelled by a signal"}, "interrupted"))
	}
	l.add(session.NewEntry(session.TypeEnd, session.EndData{
		Status: st, Exit: exitCode(err), Usage: l.out.Usage, Turns: l.out.Turns, Ms: d.Milliseconds(),
	}, string(st)))
}

// StatusOf names how a run that returned err ended, as the end entry
// records it.
func StatusOf(err error) session.Status {
	switch {
	case err == nil:
		return session.StatusDone
	case errors.Is(err, ErrPaused):
		return session.StatusPaused
	case errors.Is(err, ErrLimit), errors.Is(err, context.DeadlineExceeded):
		return session.StatusLimit
	case errors.Is(err, context.Canceled):
		return session.StatusInterrupted
	}
	return session.StatusError
}

// exitCode is the exit code the end entry records for a run that returned
// err: its status's, and for an error whether the provider failed.
func exitCode(err error) int {
	return StatusOf(err).ExitCode(llm.AsError(err) != nil)
}

// add queues an entry for the next flush.
func (l *loop) add(e session.Entry) {
	l.pending = append(l.pending, e)
	l.changed = true
}

// flush commits the queued entries as one batch. They stay queued until an
// append succeeds, so nothing is ever dropped: a failure that may pass (a
// race with git's own maintenance) is retried a few times, and any other
// failure is returned with the entries still queued, for the run to stop
// and for the final flush to try once more.
func (l *loop) flush(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	var err error
	for attempt := 0; ; attempt++ {
		if err = l.o.Log.Append(ctx, l.pending...); err == nil {
			l.pending = nil
			return nil
		}
		if attempt >= flushRetries || !session.Retryable(err) || sleepCtx(ctx, flushBackoff<<attempt) != nil {
			return fmt.Errorf("record session: %w", err)
		}
	}
}

// flushRetries and flushBackoff bound the retries of a failed append:
// 50, 100, 200, 400 ms, on top of the store's own wait for a held ref lock.
const (
	flushRetries = 4
	flushBackoff = 50 * time.Millisecond
)

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
