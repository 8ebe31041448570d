package llm

import (
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Emitter guards a stream consumer's yield for an adapter: nothing is sent
// after the consumer stopped or after the final event, and a panic is told
// apart by where it came from (see Recover).
type Emitter struct {
	provider string
	yield    func(Event) bool
	stopped  bool
	inYield  bool
}

// NewEmitter returns an Emitter for provider's stream.
func NewEmitter(provider string, yield func(Event) bool) *Emitter {
	return &Emitter{provider: provider, yield: yield}
}

// Send yields ev unless the stream is over, and reports whether the
// consumer wants more.
func (e *Emitter) Send(ev Event) bool {
	if e.stopped {
		return false
	}
	e.inYield = true
	ok := e.yield(ev)
	e.inYield = false
	if !ok || ev.Kind == EventDone || ev.Kind == EventError {
		e.stopped = true
	}
	return ok
}

// Recover, deferred by an adapter's Stream, turns a panic of the adapter or
// its SDK into an EventError, so a model's stream never panics out. A panic
// of the consumer's own loop body is not the adapter's to hide and goes on.
func (e *Emitter) Recover() {
	r := recover()
	if r == nil {
		return
	}
	if e.inYield {
		panic(r)
	}
	e.Send(Event{Kind: EventError, Err: &Error{
		Kind: ErrMalformed, Provider: e.provider, Msg: fmt.Sprintf("adapter panic: %v", r),
	}})
}

// StreamWith is an adapter's Stream: run sends the request, streams deltas
// through the Emitter, and returns the response (nil when the consumer
// stopped) or the error that ended it; the sequence then ends with exactly
// one EventDone or EventError, and a panic in run becomes an EventError.
func StreamWith(provider string, run func(*Emitter) (*Response, error)) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		e := NewEmitter(provider, yield)
		defer e.Recover()
		resp, err := run(e)
		switch {
		case err != nil:
			e.Send(Event{Kind: EventError, Err: err})
		case resp != nil:
			e.Send(Event{Kind: EventDone, Response: resp})
		}
	}
}

// RetryAfter reads the delay a response asked for: retry-after-ms (sent by
// OpenAI and Anthropic), else Retry-After in seconds or as an HTTP date; 0
// when there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
