package llm_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"decode/agent/llm"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeModel plays one list of events per attempt; the last list repeats.
type fakeModel struct {
	attempts [][]llm.Event
	calls    int
}

func (f *fakeModel) Name() string { return "fake:model" }

func (f *fakeModel) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	evs := f.attempts[min(f.calls, len(f.attempts)-1)]
	f.calls++
	return func(yield func(llm.Event) bool) {
		for _, ev := range evs {
			if !yield(ev) {
				return
			}
		}
	}
}

func text(s string) llm.Event { return llm.Event{Kind: llm.EventText, Text: s} }

func done(s string) llm.Event {
	return llm.Event{Kind: llm.EventDone, Response: &llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Text: s}, Stop: llm.StopEnd,
	}}
}

func fail(kind llm.ErrorKind, retryAfter time.Duration) llm.Event {
	return llm.Event{Kind: llm.EventError, Err: &llm.Error{Kind: kind, Provider: "fake", RetryAfter: retryAfter}}
}

// sleeps records the delays a policy asks for without waiting.
type sleeps struct{ got []time.Duration }

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.got = append(s.got, d)
	return nil
}

func policy(s *sleeps) llm.RetryPolicy {
	return llm.RetryPolicy{
		MaxAttempts: 4,
		Base:        100 * time.Millisecond,
		Max:         time.Second,
		Sleep:       s.sleep,
		Rand:        func() float64 { return 0.5 },
	}
}

func drain(m llm.Model) []llm.Event {
	var evs []llm.Event
	for ev := range m.Stream(context.Background(), llm.Request{}) {
		evs = append(evs, ev)
	}
	return evs
}

func kinds(evs []llm.Event) []llm.EventKind {
	var out []llm.EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

func TestRetrySucceedsAfterRetryableErrors(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{
		{text("par"), fail(llm.ErrRateLimit, 0)},
		{fail(llm.ErrTruncated, 0)},
		{text("whole"), done("whole")},
	}}
	s := &sleeps{}
	evs := drain(llm.WithRetry(inner, policy(s)))

	assert.Equal(t, 3, inner.calls, "attempts made")
	assert.Equal(t, []llm.EventKind{
		llm.EventText, llm.EventRetry, llm.EventRetry, llm.EventText, llm.EventDone,
	}, kinds(evs), "events seen by the consumer")
	assert.Equal(t, 2, evs[1].Attempt, "first retry announces attempt 2")
	assert.Equal(t, llm.ErrRateLimit, llm.AsError(evs[1].Err).Kind, "retry event carries the error")
	assert.Equal(t, 3, evs[2].Attempt, "second retry announces attempt 3")
	// Full jitter with Rand 0.5: half of 100ms, then half of 200ms.
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, s.got, "backoff delays")
	assert.Equal(t, "whole", evs[4].Response.Message.Text)
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{
		{fail(llm.ErrRateLimit, 700*time.Millisecond)},
		{fail(llm.ErrOverloaded, 10*time.Millisecond)},
		{done("ok")},
	}}
	s := &sleeps{}
	evs := drain(llm.WithRetry(inner, policy(s)))

	require.Equal(t, llm.EventDone, evs[len(evs)-1].Kind, "the stream ends done")
	// A longer Retry-After wins over the backoff; a shorter one does not.
	assert.Equal(t, []time.Duration{700 * time.Millisecond, 100 * time.Millisecond}, s.got, "delays")
}

func TestRetryGivesUpWhenRetryAfterExceedsMax(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrRateLimit, 5*time.Second)}}}
	s := &sleeps{}
	evs := drain(llm.WithRetry(inner, policy(s)))

	assert.Equal(t, 1, inner.calls, "no second attempt")
	assert.Empty(t, s.got, "no sleep")
	require.Equal(t, []llm.EventKind{llm.EventError}, kinds(evs))
	e := llm.AsError(evs[0].Err)
	require.NotNil(t, e, "the final error wraps the *Error")
	assert.Equal(t, llm.ErrRateLimit, e.Kind)
	assert.Contains(t, evs[0].Err.Error(), "retry after 5s")
}

func TestRetryNeverRetriesPermanentErrors(t *testing.T) {
	for _, kind := range []llm.ErrorKind{
		llm.ErrAuth, llm.ErrQuota, llm.ErrBadRequest, llm.ErrNotFound, llm.ErrMalformed, llm.ErrConfig,
	} {
		t.Run(string(kind), func(t *testing.T) {
			first := fail(kind, time.Second)
			inner := &fakeModel{attempts: [][]llm.Event{{text("x"), first}, {done("never")}}}
			s := &sleeps{}
			evs := drain(llm.WithRetry(inner, policy(s)))

			assert.Equal(t, 1, inner.calls, "attempts made")
			assert.Empty(t, s.got, "no sleep")
			assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventError}, kinds(evs))
			assert.Same(t, first.Err, evs[1].Err, "the error is passed on unchanged")
		})
	}
}

func TestRetryDoesNotRetryPlainErrors(t *testing.T) {
	plain := errors.New("something else")
	inner := &fakeModel{attempts: [][]llm.Event{{{Kind: llm.EventError, Err: plain}}, {done("never")}}}
	evs := drain(llm.WithRetry(inner, policy(&sleeps{})))

	assert.Equal(t, 1, inner.calls)
	require.Len(t, evs, 1)
	assert.Same(t, plain, evs[0].Err)
}

func TestRetryFinalErrorAfterMaxAttempts(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrServer, 0)}}}
	s := &sleeps{}
	p := policy(s)
	p.MaxAttempts = 3
	evs := drain(llm.WithRetry(inner, p))

	assert.Equal(t, 3, inner.calls, "attempts made")
	assert.Equal(t, []llm.EventKind{llm.EventRetry, llm.EventRetry, llm.EventError}, kinds(evs))
	assert.Len(t, s.got, 2, "one sleep between attempts")
	last := evs[len(evs)-1].Err
	e := llm.AsError(last)
	require.NotNil(t, e, "the final error wraps the *Error")
	assert.Equal(t, llm.ErrServer, e.Kind)
	assert.Contains(t, last.Error(), "after 3 attempts")
}

func TestRetryZeroPolicyUsesDefaults(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrNetwork, 0)}}}
	s := &sleeps{}
	m := llm.WithRetry(inner, llm.RetryPolicy{Sleep: s.sleep, Rand: func() float64 { return 0.5 }})
	drain(m)

	assert.Equal(t, llm.DefaultMaxAttempts, inner.calls, "default attempts")
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}, s.got,
		"default base, doubling")
	assert.Equal(t, "fake:model", m.Name(), "Name is the inner name")
}

func TestRetryBackoffIsCappedByMax(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrServer, 0)}}}
	s := &sleeps{}
	p := llm.RetryPolicy{MaxAttempts: 6, Base: time.Second, Max: 3 * time.Second, Sleep: s.sleep,
		Rand: func() float64 { return 0.5 }}
	drain(llm.WithRetry(inner, p))

	assert.Equal(t, []time.Duration{
		500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond,
	}, s.got)
}

func TestRetryContextCancelledDuringSleep(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrRateLimit, 0)}, {done("never")}}}
	ctx, cancel := context.WithCancel(context.Background())
	p := policy(nil)
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	var evs []llm.Event
	for ev := range llm.WithRetry(inner, p).Stream(ctx, llm.Request{}) {
		evs = append(evs, ev)
	}

	assert.Equal(t, 1, inner.calls)
	require.Equal(t, []llm.EventKind{llm.EventRetry, llm.EventError}, kinds(evs))
	assert.ErrorIs(t, evs[1].Err, context.Canceled)
	assert.Nil(t, llm.AsError(evs[1].Err), "a cancellation is not a provider error")
}

func TestRetryDefaultSleepStopsOnCancel(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrRateLimit, 0)}, {done("never")}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := llm.RetryPolicy{Base: time.Hour, Max: time.Hour, Rand: func() float64 { return 0.5 }}
	var evs []llm.Event
	for ev := range llm.WithRetry(inner, p).Stream(ctx, llm.Request{}) {
		evs = append(evs, ev)
		if ev.Kind == llm.EventRetry {
			cancel() // the wrapper now sleeps half an hour unless it watches ctx
		}
	}

	require.Equal(t, []llm.EventKind{llm.EventRetry, llm.EventError}, kinds(evs))
	assert.ErrorIs(t, evs[1].Err, context.Canceled)
}

func TestRetryNoRetryWhenContextAlreadyDone(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrNetwork, 0)}, {done("never")}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var evs []llm.Event
	for ev := range llm.WithRetry(inner, policy(&sleeps{})).Stream(ctx, llm.Request{}) {
		evs = append(evs, ev)
	}
	assert.Equal(t, 1, inner.calls)
	assert.Equal(t, []llm.EventKind{llm.EventError}, kinds(evs))
}

func TestRetryConsumerStopsEarly(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrServer, 0)}, {text("a"), text("b"), done("ab")}}}
	var got []llm.Event
	for ev := range llm.WithRetry(inner, policy(&sleeps{})).Stream(context.Background(), llm.Request{}) {
		got = append(got, ev)
		if ev.Kind == llm.EventText {
			break
		}
	}
	assert.Equal(t, []llm.EventKind{llm.EventRetry, llm.EventText}, kinds(got))
	assert.Equal(t, 2, inner.calls)

	got = nil
	inner = &fakeModel{attempts: [][]llm.Event{{fail(llm.ErrServer, 0)}, {done("never")}}}
	for ev := range llm.WithRetry(inner, policy(&sleeps{})).Stream(context.Background(), llm.Request{}) {
		got = append(got, ev)
		break // stop at the retry event: no second attempt
	}
	assert.Equal(t, []llm.EventKind{llm.EventRetry}, kinds(got))
	assert.Equal(t, 1, inner.calls)
}

func TestRetryStreamEndingWithoutResultIsTruncated(t *testing.T) {
	inner := &fakeModel{attempts: [][]llm.Event{{text("cut")}, {done("ok")}}}
	evs := drain(llm.WithRetry(inner, policy(&sleeps{})))

	assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventRetry, llm.EventDone}, kinds(evs))
	assert.Equal(t, llm.ErrTruncated, llm.AsError(evs[1].Err).Kind)
}
