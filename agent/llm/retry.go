package llm

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how often and how patiently a failed request is sent
// again. The zero value is a usable default.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included; 0 means 4.
	MaxAttempts int
	// Base is the backoff before the second attempt, doubled for each
	// later one; 0 means 500ms.
	Base time.Duration
	// Max caps the backoff; a provider asking for a longer Retry-After gets
	// its error reported rather than a wait longer than Max. 0 means 30s.
	Max time.Duration
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for the jitter; nil uses math/rand/v2.
	Rand func() float64
}

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts = 4
	DefaultRetryBase   = 500 * time.Millisecond
	DefaultRetryMax    = 30 * time.Second
)

// withDefaults fills the zero fields.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.Base <= 0 {
		p.Base = DefaultRetryBase
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// backoff is the delay before attempt (counting from 2): full jitter over
// an exponential ceiling capped at Max, and never less than what the
// provider asked for.
func (p RetryPolicy) backoff(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := p.Max
	if shift := attempt - 2; shift < 32 && p.Base<<shift < p.Max && p.Base<<shift > 0 {
		ceiling = p.Base << shift
	}
	d := time.Duration(p.Rand() * float64(ceiling))
	return max(d, retryAfter)
}

// WithRetry returns m wrapped in the one retry policy shared by every
// provider. When a stream ends with a retryable *Error (rate limit, server
// error, overload, broken connection, truncated stream) and attempts
// remain, it yields EventRetry and sends the whole request again after a
// backoff; text streamed by the failed attempt is void. Other errors end the
// stream at once. The final error after the last attempt wraps the *Error
// (AsError finds it).
func WithRetry(m Model, p RetryPolicy) Model {
	return &retryModel{inner: m, policy: p.withDefaults()}
}

type retryModel struct {
	inner  Model
	policy RetryPolicy
}

// Name is the inner model's name.
func (r *retryModel) Name() string { return r.inner.Name() }

// Stream streams the inner model, retrying as the policy allows.
func (r *retryModel) Stream(ctx context.Context, req Request) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for attempt := 1; ; attempt++ {
			more, err := r.attempt(ctx, req, yield)
			if !more || err == nil {
				return // the consumer stopped, or the stream is done
			}
			e := AsError(err)
			if e == nil || !e.Retryable() || ctx.Err() != nil {
				yield(Event{Kind: EventError, Err: err})
				return
			}
			if attempt >= r.policy.MaxAttempts {
				if attempt > 1 {
					err = fmt.Errorf("gave up after %d attempts: %w", attempt, err)
				}
				yield(Event{Kind: EventError, Err: err})
				return
			}
			if e.RetryAfter > r.policy.Max {
				err = fmt.Errorf("provider asked to retry after %v, longer than the %v limit: %w",
					e.RetryAfter, r.policy.Max, err)
				yield(Event{Kind: EventError, Err: err})
				return
			}
			if !yield(Event{Kind: EventRetry, Err: err, Attempt: attempt + 1}) {
				return
			}
			if err := r.policy.Sleep(ctx, r.policy.backoff(attempt+1, e.RetryAfter)); err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					err = ctxErr
				}
				yield(Event{Kind: EventError, Err: err})
				return
			}
		}
	}
}

// attempt streams one attempt, passing every event but the final error on.
// It returns whether the consumer wants more and the error that ended the
// stream (nil after EventDone).
func (r *retryModel) attempt(ctx context.Context, req Request, yield func(Event) bool) (bool, error) {
	for ev := range r.inner.Stream(ctx, req) {
		switch ev.Kind {
		case EventError:
			if ev.Err == nil {
				return true, &Error{Kind: ErrMalformed, Provider: r.inner.Name(), Msg: "error event without an error"}
			}
			return true, ev.Err
		case EventDone:
			return yield(ev), nil
		}
		if !yield(ev) {
			return false, nil
		}
	}
	// The inner model broke its contract; a stream that stops early is
	// treated like a truncated one.
	return true, &Error{Kind: ErrTruncated, Provider: r.inner.Name(), Msg: "stream ended without a response"}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
