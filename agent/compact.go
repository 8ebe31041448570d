package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/prompts"
	"decode/session"
)

// What starts a compaction.
const (
	TriggerThreshold = "threshold" // the estimate passed the threshold before a request
	TriggerOverflow  = "overflow"  // the provider answered that the context is too long
	TriggerManual    = "manual"    // decode compact
)

// CompactOptions configures compaction. With a zero Window nothing
// compacts before a request; an overflow answer and decode compact still do.
type CompactOptions struct {
	// Window is the model's context window and output limit.
	Window llm.Window
	// Threshold is the share of the usable window (the context window less
	// the output limit) past which a request first compacts; 0 means 0.85.
	Threshold float64
	// KeepTokens caps the recent entries kept verbatim; 0 means the smaller
	// of 20,000 tokens and a quarter of the window.
	KeepTokens int
	// Disabled turns compaction before a request off.
	Disabled bool
	// Mode and Rules are the permission mode and gate rules in force, for
	// the state record.
	Mode  string
	Rules []string
}

const (
	defaultThreshold = 0.85
	defaultKeep      = 20000
	// maxCompactions caps compactions in a row without a model step
	// between them, so that a context that cannot shrink never loops.
	maxCompactions = 3
	// minReduction is the least a compaction must save, as a share of the
	// context: less counts as stalled.
	minReduction = 0.05
	// maxSummary caps the summary's length in tokens.
	maxSummary = 4096
	// transcriptResult caps one tool output in the transcript the model
	// summarises, in bytes.
	transcriptResult = 1500
)

// limit is the estimate past which a request compacts first; 0 when the
// window is unknown.
func (c CompactOptions) limit() int {
	if !c.Window.Known() {
		return 0
	}
	t := c.Threshold
	if t <= 0 {
		t = defaultThreshold
	}
	return int(t * float64(c.Window.Context-c.outputLimit()))
}

// outputLimit is the answer's share of the window.
func (c CompactOptions) outputLimit() int {
	if c.Window.MaxOutput > 0 {
		return c.Window.MaxOutput
	}
	return c.Window.Context / 8
}

// keep is the budget of recent entries kept verbatim, in tokens.
func (c CompactOptions) keep() int {
	if c.KeepTokens > 0 {
		return c.KeepTokens
	}
	if c.Window.Known() {
		return min(defaultKeep, c.Window.Context/4)
	}
	return defaultKeep
}

// answerLimit is the output limit of a summary request: the model's, or
// 0 (the provider's default) when the window is unknown.
func (c CompactOptions) answerLimit() int {
	if !c.Window.Known() {
		return 0
	}
	return c.outputLimit()
}

// summaryLimit is the summary's length the prompt asks for, in tokens.
func (c CompactOptions) summaryLimit() int {
	n := maxSummary
	if c.Window.Known() {
		n = min(n, c.outputLimit(), c.Window.Context/8)
	}
	return n
}

// messageBudget caps the bytes of user messages a state record gives in full.
func (c CompactOptions) messageBudget() int {
	tokens := 8000
	if c.Window.Known() {
		tokens = min(tokens, c.Window.Context/8)
	}
	return 4 * tokens
}

// Compaction describes a compaction, for the event stream.
type Compaction struct {
	Trigger, Strategy         string
	TokensBefore, TokensAfter int
	// Folded is the number of entries this compaction took out of the context.
	Folded    int
	FirstKept int
	Failed    []string
	// Usage and Cost are the summarising call's, when one was made.
	Usage llm.Usage
	Cost  float64
}

// overLimit reports whether the next request should compact first.
func (l *loop) overLimit() bool {
	c := l.o.Compaction
	if c.Disabled || c.limit() == 0 {
		return false
	}
	return l.estimate() > c.limit()
}

// estimate is the estimated size of the next request, in tokens.
func (l *loop) estimate() int {
	return l.est.estimate(func() int { return fixedTokens(l.o.System, l.specs()) }, l.msgs)
}

func (l *loop) specs() []llm.ToolSpec {
	if l.o.Tools == nil {
		return nil
	}
	return l.o.Tools.Specs()
}

// sid is the session's id, for pointers into its log; "" when unrecorded.
func (l *loop) sid() string {
	if s, ok := l.o.Log.(interface{ ID() string }); ok {
		return s.ID()
	}
	return ""
}

// tooLong reports whether err is a provider's context-too-long answer.
func tooLong(err error) bool {
	e := llm.AsError(err)
	return e != nil && e.Kind == llm.ErrContextTooLong
}

// compact folds the older part of the context into a compaction entry and
// rebuilds the context from it. It tries, in turn: the model's summary
// with the recent entries kept; the previous summary with old tool outputs
// elided; fewer recent entries. When none makes the context small enough
// it fails with a context_too_long error that says what to do. reason is
// the provider's answer for an overflow.
func (l *loop) compact(ctx context.Context, trigger, focus, reason string) error {
	if err := l.flush(ctx); err != nil {
		return err
	}
	if l.compactions >= maxCompactions {
		return l.stuck(fmt.Sprintf("%d compactions in a row did not make the context fit", l.compactions))
	}
	p := l.plan(trigger, focus, reason)
	d, ok := p.summarised(ctx, l)
	if !ok {
		d, ok = p.elided()
	}
	if !ok {
		d, ok = p.fewer()
	}
	if s := p.summary; s != nil && d.Usage == (llm.Usage{}) {
		// A summary made but not used was still paid for: budgets count it.
		d.Model, d.Usage, d.Cost = s.Model, s.Usage, s.Cost
	}
	if !ok {
		l.charge(d.Usage, d.Cost)
		return l.stuck("summarising, eliding old tool outputs and keeping fewer recent turns all left it too large (" + strings.Join(p.failed, "; ") + ")")
	}
	l.record(d, p)
	return nil
}

// charge counts a summarising call in the run's usage and budget.
func (l *loop) charge(u llm.Usage, cost float64) {
	l.out.Usage = l.out.Usage.Add(u)
	l.out.Cost += cost
	l.spent.cost += cost
}

// stuck is the error of a context that could not be made to fit.
func (l *loop) stuck(why string) error {
	return &ContextFullError{Session: l.sid(), Err: &llm.Error{Kind: llm.ErrContextTooLong, Provider: l.o.Model.Name(),
		Msg: "the conversation does not fit the model's context window: " + why}}
}

// ContextFullError is a conversation that no compaction could make fit
// the model's context window: a person has to compact it with a focus or
// branch it from an earlier entry. It is a provider error
// (llm.ErrContextTooLong).
type ContextFullError struct {
	// Session is the session's id, "" for a run with no session.
	Session string
	Err     *llm.Error
}

func (e *ContextFullError) Error() string { return e.Err.Error() }
func (e *ContextFullError) Unwrap() error { return e.Err }

// record appends the compaction entry and rebuilds the context from it.
func (l *loop) record(d session.CompactionData, p *compactPlan) {
	l.charge(d.Usage, d.Cost)
	d.Spent = &session.Spent{Turns: l.spent.turns, Steps: l.spent.steps, Cost: l.spent.cost,
		Ms: l.spent.active.Milliseconds(), Manual: d.Trigger == TriggerManual}
	e := session.NewEntry(session.TypeCompaction, d, fmt.Sprintf("compaction %s %d→%d tokens", d.Strategy, d.TokensBefore, d.TokensAfter))
	l.add(e)
	l.msgs = messagesOf(view(append(p.entries, e), p.sid))
	l.est.reset()
	l.folded = d.FoldedAssistant
	l.compactions++
	l.o.Sink(Event{Type: EventCompaction, Compaction: &Compaction{
		Trigger: d.Trigger, Strategy: d.Strategy, TokensBefore: d.TokensBefore, TokensAfter: d.TokensAfter,
		Folded: d.Folded, FirstKept: d.FirstKept, Failed: d.Failed, Usage: d.Usage, Cost: d.Cost,
	}})
}

// compactPlan is what one compaction works from.
type compactPlan struct {
	trigger, focus, reason, sid string
	entries                     []session.Entry // the whole log, flushed
	prev                        session.CompactionData
	v                           []session.Entry // the view the context is built from
	base                        int             // v[base:] are raw entries (v[0] is the previous fold)
	tok                         []int           // tokens of each entry of v
	fixed, before, target, keep int
	state                       session.StateRecord
	failed                      []string
	o                           CompactOptions
	// summary is the summary candidate, when the model gave one.
	summary *session.CompactionData
}

func (l *loop) plan(trigger, focus, reason string) *compactPlan {
	entries := l.o.Log.Entries()
	p := &compactPlan{trigger: trigger, focus: focus, reason: reason, sid: l.sid(), entries: entries, o: l.o.Compaction}
	c, prev := lastCompaction(entries)
	p.prev = prev
	p.v = view(entries, p.sid)
	if c >= 0 {
		p.base = 1
	}
	p.tok = make([]int, len(p.v))
	for i, e := range p.v {
		p.tok[i] = entryTokens(e)
	}
	p.fixed = fixedTokens(l.o.System, l.specs())
	p.before = max(l.estimate(), p.fixed+sum(p.tok))
	p.target = int(float64(p.before) * (1 - minReduction))
	if lim := p.o.limit(); lim > 0 {
		p.target = min(p.target, lim)
	}
	if trigger == TriggerOverflow {
		// The provider counted more than the estimate: shrink for real.
		p.target = min(p.target, p.before*7/10)
	}
	p.keep = p.o.keep()
	p.state = buildState(prev.State, entries[c+1:], stateInput{mode: p.o.Mode, rules: p.o.Rules, budget: p.o.messageBudget()})
	return p
}

// entryTokens estimates the tokens an entry adds to the context.
func entryTokens(e session.Entry) int {
	switch e.Type {
	case session.TypeUser, session.TypeSteer:
		var d session.UserData
		if e.Decode(&d) == nil {
			return perMessage + prompts.EstimateTokens(d.Text) + perImage*len(session.Images(d.Attachments))
		}
	case session.TypeAssistant:
		var d session.AssistantData
		if e.Decode(&d) == nil {
			return messageTokens(d.Message)
		}
	case session.TypeToolResult:
		var d session.ToolResultData
		if e.Decode(&d) == nil {
			return perMessage + prompts.EstimateTokens(d.CallID) + prompts.EstimateTokens(d.Content)
		}
	}
	return 0
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// cut returns the index of v from which the newest entries fit in budget
// tokens, at an entry that starts a message (a user or steering message or
// a model response, never a tool result, so a call keeps its result).
// len(v) means none is kept.
func (p *compactPlan) cut(budget int) int {
	best, used := len(p.v), 0
	for i := len(p.v) - 1; i >= p.base; i-- {
		used += p.tok[i]
		if used > budget {
			break
		}
		switch p.v[i].Type {
		case session.TypeUser, session.TypeSteer, session.TypeAssistant:
			best = i
		}
	}
	return best
}

// data is the compaction entry for keeping v[cut:], with summary.
func (p *compactPlan) data(strategy, summary string, cut int, elided []int) session.CompactionData {
	d := session.CompactionData{
		Trigger: p.trigger, Reason: p.reason, Strategy: strategy, Summary: summary, Focus: p.focus,
		TokensBefore: p.before, State: p.state, Failed: append([]string(nil), p.failed...),
		FoldedAssistant: p.prev.FoldedAssistant,
	}
	if cut < len(p.v) {
		d.FirstKept = p.v[cut].ID
	}
	for _, e := range p.v[p.base:min(cut, len(p.v))] {
		d.Folded++
		if e.Type == session.TypeAssistant {
			d.FoldedAssistant++
		}
	}
	for _, id := range append(p.prev.Elided, elided...) {
		if d.FirstKept > 0 && id >= d.FirstKept {
			d.Elided = append(d.Elided, id)
		}
	}
	after := append(p.entries[:len(p.entries):len(p.entries)], session.NewEntry(session.TypeCompaction, d, ""))
	d.TokensAfter = p.fixed + messagesTokens(messagesOf(view(after, p.sid)))
	return d
}

// fits reports whether a candidate is small enough, else notes why not.
func (p *compactPlan) fits(what string, d session.CompactionData) bool {
	if d.TokensAfter <= p.target {
		return true
	}
	p.failed = append(p.failed, fmt.Sprintf("%s left %d of %d tokens (needed at most %d)", what, d.TokensAfter, p.before, p.target))
	return false
}

// summarised asks the model to summarise what is folded, keeping the
// newest entries up to the keep budget.
func (p *compactPlan) summarised(ctx context.Context, l *loop) (session.CompactionData, bool) {
	cut := p.cut(p.keep)
	for budget := p.keep / 2; cut <= p.base && budget > 0; budget /= 2 {
		cut = p.cut(budget) // a short session: summarise all but its last turns
	}
	if cut <= p.base {
		p.failed = append(p.failed, "summary: nothing old enough to summarise")
		return session.CompactionData{}, false
	}
	replaced := sum(p.tok[:cut])
	req := llm.Request{
		System:   prompts.Compact(),
		Messages: []llm.Message{{Role: llm.RoleUser, Text: p.summaryPrompt(cut)}},
		// The answer's own limit, not the summary's: a reasoning model
		// spends part of it thinking. The prompt asks for the length.
		MaxTokens: p.o.answerLimit(),
		Purpose:   llm.PurposeSummary,
		Folded:    l.folded,
	}
	resp, err := llm.Collect(l.o.Model.Stream(ctx, req))
	if err != nil {
		p.failed = append(p.failed, "summary: "+err.Error())
		return session.CompactionData{}, false
	}
	summary := strings.TrimSpace(resp.Message.Text)
	d := p.data(session.CompactSummary, summary, cut, nil)
	d.Model, d.Usage = resp.Model, resp.Usage
	if l.o.Cost != nil {
		d.Cost = l.o.Cost(resp.Model, resp.Usage)
	}
	p.summary = &d
	switch n := prompts.EstimateTokens(summary); {
	case summary == "":
		p.failed = append(p.failed, "summary: the model answered nothing")
	case n >= replaced:
		p.failed = append(p.failed, fmt.Sprintf("summary: %d tokens, not smaller than the %d it replaces", n, replaced))
	default:
		if p.fits("summary", d) {
			return d, true
		}
	}
	return session.CompactionData{}, false
}

// elided keeps every entry the last compaction kept but shows the tool
// outputs older than the keep budget as pointers into the log, with the
// previous summary.
func (p *compactPlan) elided() (session.CompactionData, bool) {
	cut := p.cut(p.keep)
	var ids []int
	for _, e := range p.v[p.base:cut] {
		if e.Type == session.TypeToolResult {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		p.failed = append(p.failed, "elide: no old tool outputs")
		return session.CompactionData{}, false
	}
	d := p.data(session.CompactElide, p.prev.Summary, p.base, ids)
	d.Failed = append([]string(nil), p.failed...)
	return d, p.fits("elide", d)
}

// fewer keeps fewer recent entries, down to none, with the summary the
// model gave if it was usable, else the previous one.
func (p *compactPlan) fewer() (session.CompactionData, bool) {
	summary := p.prev.Summary
	var model string
	var usage llm.Usage
	var cost float64
	if s := p.summary; s != nil && s.Summary != "" && prompts.EstimateTokens(s.Summary) < p.target/2 {
		summary, model, usage, cost = s.Summary, s.Model, s.Usage, s.Cost
	}
	for budget := p.keep / 2; ; budget /= 2 {
		cut := p.cut(budget)
		if cut > p.base {
			d := p.data(session.CompactFewer, summary, cut, nil)
			d.Model, d.Usage, d.Cost = model, usage, cost
			d.Failed = append([]string(nil), p.failed...)
			if d.TokensAfter <= p.target {
				return d, true
			}
		}
		if budget == 0 {
			p.failed = append(p.failed, "fewer: even keeping no recent entries left too much")
			return session.CompactionData{}, false
		}
	}
}

// summaryPrompt asks for a summary of v[base:cut], with the previous
// summary and the focus, cut to fit the window.
func (p *compactPlan) summaryPrompt(cut int) string {
	var b strings.Builder
	if p.prev.Summary != "" {
		b.WriteString("The summary of the conversation before this part:\n<previous-summary>\n")
		b.WriteString(p.prev.Summary)
		b.WriteString("\n</previous-summary>\n\n")
	}
	room := 4 * (64000 - p.o.summaryLimit())
	if p.o.Window.Known() {
		room = 4 * (p.o.Window.Context - p.o.summaryLimit() - prompts.EstimateTokens(prompts.Compact()) - 1000)
	}
	room -= b.Len()
	b.WriteString("The conversation to summarise:\n<conversation>\n")
	b.WriteString(transcript(p.v[p.base:cut], room))
	b.WriteString("</conversation>\n\n")
	fmt.Fprintf(&b, "Write the summary now, in at most %d words, including what the previous summary says that still matters.", p.o.summaryLimit()*3/4)
	if p.focus != "" {
		b.WriteString(" Make sure it keeps, in detail: " + p.focus)
	}
	return b.String()
}

// transcript renders entries as text for the summariser, tool outputs cut
// to their head and tail, the oldest part dropped past room bytes.
func transcript(entries []session.Entry, room int) string {
	var parts []string
	for _, e := range entries {
		switch e.Type {
		case session.TypeUser, session.TypeSteer:
			var d session.UserData
			if e.Decode(&d) == nil {
				parts = append(parts, fmt.Sprintf("[%s #%d]\n%s\n", e.Type, e.ID, d.Text))
			}
		case session.TypeAssistant:
			var d session.AssistantData
			if e.Decode(&d) != nil {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "[assistant #%d]\n", e.ID)
			if d.Message.Text != "" {
				b.WriteString(d.Message.Text + "\n")
			}
			for _, c := range d.Message.Calls {
				fmt.Fprintf(&b, "→ %s %s\n", c.Name, clip(string(c.Args), 400))
			}
			parts = append(parts, b.String())
		case session.TypeToolResult:
			var d session.ToolResultData
			if e.Decode(&d) == nil {
				tag := "result"
				if d.IsError {
					tag = "error"
				}
				parts = append(parts, fmt.Sprintf("[%s of %s #%d]\n%s\n", tag, d.Name, e.ID, headTail(d.Content, transcriptResult)))
			}
		}
	}
	total := 0
	from := len(parts)
	for from > 0 && total+len(parts[from-1]) <= room {
		from--
		total += len(parts[from])
	}
	out := strings.Join(parts[from:], "")
	if from > 0 {
		out = fmt.Sprintf("[%d earlier messages left out to fit; the previous summary and the state record cover them]\n", from) + out
	}
	return out
}

// headTail keeps the first and last part of s when it is longer than n bytes.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	h := n * 2 / 3
	return clip(s, h) + fmt.Sprintf("\n[… %d bytes left out …]\n", len(s)-n) + s[len(s)-(n-h):]
}

// ErrOpenCalls refuses to compact a session whose last model response
// still waits for tool results: the run must be continued or its calls
// decided first.
var ErrOpenCalls = errors.New("the session's last model response still waits for tool results (a paused or interrupted run)")

// Compact compacts the context of the session in o.Log by hand (decode
// compact), focusing the summary on focus when it is not empty, and
// records the compaction entry. It refuses a session whose last model
// response still waits for tool results (a paused run): decide them first.
func Compact(ctx context.Context, o Options, focus string) (Compaction, error) {
	if o.Sink == nil {
		o.Sink = func(Event) {}
	}
	var got Compaction
	sink := o.Sink
	o.Sink = func(ev Event) {
		if ev.Compaction != nil {
			got = *ev.Compaction
		}
		sink(ev)
	}
	l := &loop{o: o, now: time.Now}
	entries := o.Log.Entries()
	var open *turn
	l.msgs, open = history(entries, l.sid())
	if open != nil {
		return got, ErrOpenCalls
	}
	if len(l.msgs) == 0 {
		return got, errors.New("the session has no conversation to compact")
	}
	if _, d := lastCompaction(entries); d.FoldedAssistant > 0 {
		l.folded = d.FoldedAssistant
	}
	l.spent = spentIn(entries, o.Cost)
	if err := l.compact(ctx, TriggerManual, focus, ""); err != nil {
		return got, err
	}
	return got, l.flush(context.WithoutCancel(ctx))
}
