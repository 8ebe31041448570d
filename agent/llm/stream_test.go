package llm

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmitterRecoversAdapterPanics(t *testing.T) {
	var got []Event
	func() {
		e := NewEmitter("x", func(ev Event) bool { got = append(got, ev); return true })
		defer e.Recover()
		panic("adapter bug")
	}()
	require.Len(t, got, 1, "an adapter panic becomes one error event")
	assert.Equal(t, EventError, got[0].Kind)
	assert.Equal(t, ErrMalformed, AsError(got[0].Err).Kind)
	assert.Equal(t, "x", AsError(got[0].Err).Provider)

	assert.PanicsWithValue(t, "consumer bug", func() {
		e := NewEmitter("x", func(Event) bool { panic("consumer bug") })
		defer e.Recover()
		e.Send(Event{Kind: EventText, Text: "x"})
	}, "a panic of the consumer's loop body is not swallowed")
}

func TestEmitterStopsAfterTheEnd(t *testing.T) {
	n := 0
	e := NewEmitter("x", func(Event) bool { n++; return true })
	assert.True(t, e.Send(Event{Kind: EventText}))
	assert.True(t, e.Send(Event{Kind: EventDone, Response: &Response{}}))
	assert.False(t, e.Send(Event{Kind: EventText}), "nothing after the final event")
	assert.Equal(t, 2, n)

	n = 0
	e = NewEmitter("x", func(Event) bool { n++; return false })
	assert.False(t, e.Send(Event{Kind: EventText}))
	assert.False(t, e.Send(Event{Kind: EventText}), "nothing after the consumer stopped")
	assert.Equal(t, 1, n)
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	h := http.Header{}
	assert.Zero(t, RetryAfter(h, now))
	h.Set("Retry-After", "2.5")
	assert.Equal(t, 2500*time.Millisecond, RetryAfter(h, now))
	h.Set("Retry-After-Ms", "120")
	assert.Equal(t, 120*time.Millisecond, RetryAfter(h, now), "retry-after-ms wins")
	h = http.Header{}
	h.Set("Retry-After", now.Add(time.Hour).Format(http.TimeFormat))
	assert.Equal(t, time.Hour, RetryAfter(h, now), "an HTTP date")
	h.Set("Retry-After", now.Add(-time.Hour).Format(http.TimeFormat))
	assert.Zero(t, RetryAfter(h, now), "a date in the past")
	for _, v := range []string{"soon", "-3", "0", " "} {
		h.Set("Retry-After", v)
		assert.Zero(t, RetryAfter(h, now), "Retry-After %q", v)
	}
}

func TestStreamWithEndsOnce(t *testing.T) {
	collect := func(seq func(func(Event) bool)) []EventKind {
		var kinds []EventKind
		seq(func(ev Event) bool { kinds = append(kinds, ev.Kind); return true })
		return kinds
	}
	done := StreamWith("x", func(e *Emitter) (*Response, error) {
		e.Send(Event{Kind: EventText, Text: "hi"})
		return &Response{}, nil
	})
	assert.Equal(t, []EventKind{EventText, EventDone}, collect(done))
	failed := StreamWith("x", func(*Emitter) (*Response, error) { return nil, &Error{Kind: ErrServer} })
	assert.Equal(t, []EventKind{EventError}, collect(failed))
	stopped := StreamWith("x", func(*Emitter) (*Response, error) { return nil, nil })
	assert.Empty(t, collect(stopped), "a consumer that stopped gets nothing more")
	panicked := StreamWith("x", func(*Emitter) (*Response, error) { panic("boom") })
	assert.Equal(t, []EventKind{EventError}, collect(panicked))
}
