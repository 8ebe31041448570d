package commands

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"decode/session"

	"decode/agent"
	"decode/agent/llm"
)

// eventsVersion is the version of the --json event schema, in every
// event's "v". It changes only when an event loses or changes a field;
// new event types and new fields do not change it.
const eventsVersion = 1

// maxEventContent caps a tool result's content in a tool_result event;
// the session keeps all of it (decode log --jsonl).
const maxEventContent = 4096

// jsonRenderer prints a run as JSON Lines on stdout, one event per line,
// each with the same head (v, type, session, ts) and the fields of its
// type, always all of them, so consumers can rely on the keys. The schema
// is documented in docs/events.md; a test checks the documentation
// against what decode prints.
type jsonRenderer struct {
	out     io.Writer
	schema  bool // --schema: the end event carries the answer as result
	mu      sync.Mutex
	now     func() time.Time
	started time.Time
	session string
	begun   bool
	ended   bool
	// early holds warnings given before the start event.
	early []string
	// priced is whether the model's price is known, so end.cost means
	// something (else it is null).
	priced bool
}

func newJSONRenderer(out io.Writer, schema bool) *jsonRenderer {
	return &jsonRenderer{out: out, schema: schema, now: time.Now, started: time.Now()}
}

// head is what every event starts with.
type head struct {
	V       int    `json:"v"`
	Type    string `json:"type"`
	Session string `json:"session"`
	TS      string `json:"ts"`
}

type startEvent struct {
	head
	Model   string `json:"model"`
	Mode    string `json:"mode"`
	Cwd     string `json:"cwd"`
	Command string `json:"command"`
	Version string `json:"version"`
}

type textEvent struct {
	head
	Text string `json:"text"`
}

type toolCallEvent struct {
	head
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Summary  string          `json:"summary"`
	Decision string          `json:"decision"`
	Reason   string          `json:"reason"`
}

type toolResultEvent struct {
	head
	ID        string `json:"id"`
	Name      string `json:"name"`
	IsError   bool   `json:"is_error"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
	Note      string `json:"note"`
	Ms        int64  `json:"ms"`
}

type approvalEvent struct {
	head
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Summary string          `json:"summary"`
	Reason  string          `json:"reason"`
}

type usageEvent struct {
	head
	eventUsage
}

// eventUsage is llm.Usage with every key present.
type eventUsage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read"`
	CacheWrite int `json:"cache_write"`
}

func usageOf(u llm.Usage) eventUsage {
	return eventUsage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}

type retryEvent struct {
	head
	Attempt int    `json:"attempt"`
	Message string `json:"message"`
}

type compactionEvent struct {
	head
	Trigger      string   `json:"trigger"`
	Strategy     string   `json:"strategy"`
	TokensBefore int      `json:"tokens_before"`
	TokensAfter  int      `json:"tokens_after"`
	Folded       int      `json:"folded"`
	FirstKept    int      `json:"first_kept"`
	Failed       []string `json:"failed"`
}

type messageEvent struct {
	head
	Message string `json:"message"`
}

type errorEvent struct {
	head
	Message string `json:"message"`
	Kind    string `json:"kind"`
	Exit    int    `json:"exit"`
}

type endEvent struct {
	head
	Status string     `json:"status"`
	Exit   int        `json:"exit"`
	Usage  eventUsage `json:"usage"`
	// Cost is in USD; null when the model's price is unknown.
	Cost  *float64 `json:"cost"`
	Turns int      `json:"turns"`
	Ms    int64    `json:"ms"`
	// Result is the final answer of a run that succeeded: with --schema
	// the validated JSON, else the answer's text as a string; null
	// otherwise.
	Result json.RawMessage `json:"result"`
}

func (j *jsonRenderer) head(typ string) head {
	return head{V: eventsVersion, Type: typ, Session: j.session, TS: j.now().UTC().Format("2006-01-02T15:04:05.000Z")}
}

// emit writes one event as one line. The caller holds j.mu.
func (j *jsonRenderer) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every event type encodes; a failure is a bug worth a visible line.
		b, _ = json.Marshal(messageEvent{head: j.head("warning"), Message: "encode event: " + err.Error()})
	}
	j.out.Write(append(b, '\n'))
}

func (j *jsonRenderer) Lock()   { j.mu.Lock() }
func (j *jsonRenderer) Unlock() { j.mu.Unlock() }

func (j *jsonRenderer) begin(opts *agent.Options, info runInfo) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.session, j.begun = info.Session, true
	_, j.priced = llm.Cost(info.Model, llm.Usage{})
	j.emit(startEvent{head: j.head("start"), Model: info.Model, Mode: info.Mode, Cwd: info.Cwd, Command: info.Command, Version: info.Version})
	j.flushEarly()
}

func (j *jsonRenderer) flushEarly() {
	for _, w := range j.early {
		j.emit(messageEvent{head: j.head("warning"), Message: w})
	}
	j.early = nil
}

func (j *jsonRenderer) warn(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.begun {
		j.early = append(j.early, s)
		return
	}
	j.emit(messageEvent{head: j.head("warning"), Message: s})
}

func (j *jsonRenderer) event(ev agent.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch ev.Type {
	case agent.EventText:
		j.emit(textEvent{head: j.head("text"), Text: ev.Text})
	case agent.EventToolCall:
		c := callOf(ev)
		j.emit(toolCallEvent{head: j.head("tool_call"), ID: c.ID, Name: c.Name, Args: eventArgs(c.Args),
			Summary: ev.Summary, Decision: ev.Decision, Reason: ev.Reason})
	case agent.EventToolResult:
		c := callOf(ev)
		e := toolResultEvent{head: j.head("tool_result"), ID: c.ID, Name: c.Name, Note: ev.Note, Ms: ev.Ms}
		if ev.Result != nil {
			e.IsError = ev.Result.IsError
			e.Content, e.Truncated = capContent(ev.Result.Content, maxEventContent)
		}
		j.emit(e)
	case agent.EventApprovalRequest:
		c := callOf(ev)
		j.emit(approvalEvent{head: j.head("approval_request"), ID: c.ID, Name: c.Name, Args: eventArgs(c.Args),
			Summary: ev.Summary, Reason: ev.Reason})
	case agent.EventUsage:
		if ev.Usage != nil {
			j.emit(usageEvent{head: j.head("usage"), eventUsage: usageOf(*ev.Usage)})
		}
	case agent.EventRetry:
		msg := ""
		if ev.Err != nil {
			msg = ev.Err.Error()
		}
		j.emit(retryEvent{head: j.head("retry"), Attempt: ev.Attempt, Message: msg})
	case agent.EventWarning:
		j.emit(messageEvent{head: j.head("warning"), Message: ev.Text})
	case agent.EventSteer:
		j.emit(textEvent{head: j.head("steer"), Text: ev.Text})
	case agent.EventCompaction:
		if c := ev.Compaction; c != nil {
			j.emit(compactionEvent{head: j.head("compaction"), Trigger: c.Trigger, Strategy: c.Strategy,
				TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, Folded: c.Folded, FirstKept: c.FirstKept,
				Failed: append([]string{}, c.Failed...)})
		}
	}
}

func (j *jsonRenderer) finish(out agent.Outcome, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.end(out, err)
}

func (j *jsonRenderer) close(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.end(agent.Outcome{}, err)
}

// end prints the error and end events, once: a run's finish comes first
// and close only reports what ended the command before (or without) one.
func (j *jsonRenderer) end(out agent.Outcome, err error) {
	if j.ended {
		return
	}
	j.ended = true
	j.flushEarly()
	code := ExitCode(err)
	// A pause is how a headless run waits, not a failure: the
	// approval_request event and the end event's status say it.
	if err != nil && code != ExitPaused {
		j.emit(errorEvent{head: j.head("error"), Message: errorLine(err), Kind: errorKind(err), Exit: code})
	}
	e := endEvent{head: j.head("end"), Status: exitStatus(code), Exit: code, Usage: usageOf(out.Usage), Turns: out.Turns,
		Ms: j.now().Sub(j.started).Milliseconds(), Result: json.RawMessage("null")}
	if j.priced || out.Cost > 0 {
		// Rounded to 1e-10 dollars: sums of float prices
		// otherwise print as 0.0007711999999999999.
		c := math.Round(out.Cost*1e10) / 1e10
		e.Cost = &c
	}
	switch {
	case err != nil || out.Text == "":
	case j.schema && json.Valid([]byte(out.Text)):
		e.Result = json.RawMessage(out.Text)
	case !j.schema:
		// The final answer as a string, as --output-last-message would
		// keep it: a script need not join the text events.
		if s, err := json.Marshal(out.Text); err == nil {
			e.Result = s
		}
	}
	j.emit(e)
}

func callOf(ev agent.Event) llm.ToolCall {
	if ev.Call == nil {
		return llm.ToolCall{}
	}
	return *ev.Call
}

// eventArgs keeps a call's arguments as JSON: arguments that are not valid
// JSON (a model's mistake) become a JSON string, so the line stays valid.
func eventArgs(a json.RawMessage) json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(a) {
		return a
	}
	s, _ := json.Marshal(string(a))
	return s
}

// capContent cuts s to at most n bytes at a rune boundary.
func capContent(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// exitStatus names how a command ended, from its exit code, in the words
// of the session's end entry.
func exitStatus(code int) string { return string(session.StatusOfExit(code)) }

// errorKind classifies an error for the error event: the provider's error
// kind (auth, rate_limit, ...) when it is one, else the kind its exit code
// stands for.
func errorKind(err error) string {
	if e := llm.AsError(err); e != nil && e.Kind != "" {
		return string(e.Kind)
	}
	var se *agent.SchemaError
	if errors.As(err, &se) {
		return "schema"
	}
	switch ExitCode(err) {
	case ExitUsage:
		return "usage"
	case ExitPaused:
		return "paused"
	case ExitLimit:
		return "limit"
	case ExitConflict:
		return "conflict"
	case ExitInterrupted:
		return "interrupted"
	}
	return "error"
}
