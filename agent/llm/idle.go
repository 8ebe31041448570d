package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long a request may go without receiving a byte
// (no response headers, or a stream gone silent) before it fails.
const DefaultIdleTimeout = 2 * time.Minute

// IdleError reports a request that received nothing for its idle timeout.
// It is a net.Error whose Timeout is true, so every adapter classifies it
// as a network failure, which the retry policy sends again.
type IdleError struct{ After time.Duration }

func (e *IdleError) Error() string {
	return fmt.Sprintf("no data from the provider for %s (the idle timeout; raise it with --idle-timeout or idle_timeout in config)", e.After)
}

// Timeout and Temporary make IdleError a net.Error.
func (e *IdleError) Timeout() bool   { return true }
func (e *IdleError) Temporary() bool { return true }

// WithIdleTimeout returns a copy of c whose requests fail with *IdleError
// when no byte arrives for idle: before the response headers, or between
// two reads of the body. A stalled stream otherwise hangs a headless run
// until its wall-clock limit. idle <= 0 returns c unchanged.
func WithIdleTimeout(c *http.Client, idle time.Duration) *http.Client {
	if idle <= 0 {
		return c
	}
	cc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = &idleTransport{base: base, idle: idle}
	return &cc
}

type idleTransport struct {
	base http.RoundTripper
	idle time.Duration
}

// watch cancels a request when it stays idle too long.
type watch struct {
	mu     sync.Mutex
	timer  *time.Timer
	fired  bool
	idle   time.Duration
	cancel context.CancelFunc
}

// touch restarts the idle clock; it reports false once the clock ran out.
func (w *watch) touch() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired {
		return false
	}
	w.timer.Reset(w.idle)
	return true
}

func (w *watch) expired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *watch) stop() {
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel()
}

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{idle: t.idle, cancel: cancel}
	w.mu.Lock()
	w.timer = time.AfterFunc(t.idle, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		cancel()
	})
	w.mu.Unlock()
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		w.stop()
		if w.expired() {
			return nil, &IdleError{After: t.idle}
		}
		return nil, err
	}
	if !w.touch() {
		resp.Body.Close()
		w.stop()
		return nil, &IdleError{After: t.idle}
	}
	resp.Body = &idleBody{rc: resp.Body, w: w}
	return resp, nil
}

// idleBody restarts the idle clock on every read that returns data.
type idleBody struct {
	rc io.ReadCloser
	w  *watch
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && !b.w.touch() && err == nil {
		err = &IdleError{After: b.w.idle}
	}
	if err != nil && err != io.EOF && b.w.expired() {
		err = &IdleError{After: b.w.idle}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.w.stop()
	return b.rc.Close()
}
