package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// newRequest is the request every scenario sends: a prompt and one tool.
func newRequest() llm.Request {
	return llm.Request{
		System:   "You are decode.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "read main.go"}},
		Tools: []llm.ToolSpec{{
			Name: "read", Description: "Read a file.",
			Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		}},
	}
}

// Run runs every scenario of p's fixture set as a subtest, each against a
// fresh local server, through llm.WithRetry with a policy that records its
// backoffs instead of sleeping.
func Run(t *testing.T, p Provider) {
	h := harness{p: p, fx: Load(t, p.Dir)}
	t.Run("text", func(t *testing.T) { h.text(t, h.fx.Text.Reply) })
	t.Run("text_trickled", func(t *testing.T) {
		r := h.fx.Text.Reply
		r.Trickle = true
		h.text(t, r)
	})
	t.Run("tool_call", func(t *testing.T) { h.calls(t, h.fx.ToolCall, llm.StopToolUse) })
	t.Run("two_calls", h.twoCalls)
	t.Run("invalid_args", h.invalidArgs)
	t.Run("rate_limit_with_retry_after", func(t *testing.T) { h.retried(t, h.fx.RateLimit, llm.ErrRateLimit) })
	t.Run("server_error_then_success", func(t *testing.T) { h.retried(t, h.fx.ServerError, llm.ErrServer) })
	t.Run("overloaded", func(t *testing.T) { h.retried(t, h.fx.Overloaded, llm.ErrOverloaded) })
	t.Run("error_event_after_200", h.errorEvent)
	t.Run("reset_mid_stream", h.reset)
	t.Run("auth_not_retried", func(t *testing.T) { h.final(t, h.fx.Auth, llm.ErrAuth) })
	t.Run("quota_not_retried", func(t *testing.T) { h.final(t, h.fx.Quota, llm.ErrQuota) })
	t.Run("context_too_long_not_retried", func(t *testing.T) { h.final(t, h.fx.ContextTooLong, llm.ErrContextTooLong) })
	t.Run("retries_exhausted", h.exhausted)
}

type harness struct {
	p  Provider
	fx Fixtures
}

// stream sends the request once through WithRetry, the server answering
// with replies in order.
func (h harness) stream(t *testing.T, replies ...Reply) ([]llm.Event, *Server, *Sleeps) {
	t.Helper()
	srv := NewServer(t, h.p.Dir, h.fx.Path)
	srv.Queue(replies...)
	sl := &Sleeps{}
	m := llm.WithRetry(h.p.New(t, srv.URL, h.fx.Model), sl.Policy())
	var evs []llm.Event
	for ev := range m.Stream(context.Background(), newRequest()) {
		evs = append(evs, ev)
	}
	require.NotEmpty(t, evs, "the stream yielded nothing")
	return evs, srv, sl
}

func (h harness) text(t *testing.T, r Reply) {
	evs, srv, _ := h.stream(t, r)
	resp := done(t, evs)
	assert.Len(t, srv.Requests(), 1, "one request")
	assert.GreaterOrEqual(t, count(evs, llm.EventText), 2, "the answer streams in pieces: %s", describe(evs))
	assert.Equal(t, h.fx.Text.Text, textOf(evs), "the text events make the answer")
	assert.Equal(t, h.fx.Text.Text, resp.Message.Text)
	assert.Equal(t, llm.RoleAssistant, resp.Message.Role)
	assert.Empty(t, resp.Message.Calls)
	assert.Equal(t, llm.StopEnd, resp.Stop)
	assert.NotEmpty(t, resp.Model, "the model that answered")
	if want := h.fx.Text.Usage; want != nil {
		assert.Equal(t, *want, resp.Usage, "usage, cached tokens included in Input")
	}
	assert.Positive(t, resp.Usage.Input)
	assert.Positive(t, resp.Usage.Output)
}

// calls checks a response with tool calls; stop is its stop reason, or ""
// for any.
func (h harness) calls(t *testing.T, c Case, stop llm.StopReason) []llm.ToolCall {
	evs, srv, _ := h.stream(t, c.Reply)
	resp := done(t, evs)
	assert.Len(t, srv.Requests(), 1, "one request")
	got := callsOf(evs)
	checkCalls(t, c.Calls, got)
	assert.Equal(t, got, resp.Message.Calls, "the response holds the calls that were streamed")
	if stop != "" {
		assert.Equal(t, stop, resp.Stop)
	}
	for _, call := range got {
		assert.NotEmpty(t, call.ID, "every call has an id for its result")
	}
	return got
}

func (h harness) twoCalls(t *testing.T) {
	got := h.calls(t, h.fx.TwoCalls, llm.StopToolUse)
	if len(got) == 2 {
		assert.NotEqual(t, got[0].ID, got[1].ID, "distinct call ids")
	}
}

func (h harness) invalidArgs(t *testing.T) {
	c := h.fx.InvalidArgs
	if c.Kind == "" {
		require.Len(t, c.Calls, 1, "invalid_args needs one call with raw_args, or a kind")
		// Arguments often break because the answer hit its token limit,
		// so the stop reason may be either.
		got := h.calls(t, c, "")
		if len(got) == 1 {
			assert.False(t, json.Valid(got[0].Args), "the arguments reach the tool as sent, to be rejected there")
		}
		return
	}
	// The wire format cannot carry invalid JSON; the provider's own
	// failure to make a call is retried, and the retry makes the call.
	evs, srv, _ := h.stream(t, c.Reply, h.fx.ToolCall.Reply)
	resp := done(t, evs)
	assert.Len(t, srv.Requests(), 2, "sent again")
	retries := retriesOf(evs)
	require.Len(t, retries, 1, "one retry: %s", describe(evs))
	assert.Equal(t, c.Kind, errorOf(t, retries[0]).Kind)
	checkCalls(t, h.fx.ToolCall.Calls, resp.Message.Calls)
}

// retried checks a fault that is retried once and then succeeds.
func (h harness) retried(t *testing.T, c Case, kind llm.ErrorKind) []llm.Event {
	evs, srv, sl := h.stream(t, c.Reply, h.fx.Text.Reply)
	resp := done(t, evs)
	reqs := srv.Requests()
	require.Len(t, reqs, 2, "the failed attempt and the retry, counted by the server")
	assert.Equal(t, string(reqs[0].Body), string(reqs[1].Body), "the whole request is sent again")
	retries := retriesOf(evs)
	require.Len(t, retries, 1, "one retry event: %s", describe(evs))
	assert.Equal(t, 2, retries[0].Attempt)
	e := errorOf(t, retries[0])
	assert.Equal(t, kind, e.Kind, "kind of %v", e)
	assert.Equal(t, h.p.Name, e.Provider)
	var wait time.Duration
	if c.RetryAfter != "" {
		var err error
		wait, err = time.ParseDuration(c.RetryAfter)
		require.NoError(t, err)
		assert.Equal(t, wait, e.RetryAfter, "Retry-After read from the response")
	}
	assert.Equal(t, []time.Duration{wait}, sl.Durations(), "one backoff, no shorter than Retry-After")
	_, after := splitAtRetry(evs)
	assert.Equal(t, h.fx.Text.Text, textOf(after), "the retry streams the whole answer again")
	assert.Equal(t, h.fx.Text.Text, resp.Message.Text, "the response holds only the retried answer")
	return evs
}

func (h harness) errorEvent(t *testing.T) {
	evs := h.retried(t, h.fx.ErrorEvent, h.fx.ErrorEvent.Kind)
	before, _ := splitAtRetry(evs)
	assert.NotEmpty(t, textOf(before), "the fixture streams text before its error event")
}

func (h harness) reset(t *testing.T) {
	broken := h.fx.Text.Reply
	broken.Reset, broken.Trickle = true, false
	evs, srv, _ := h.stream(t, broken, h.fx.Text.Reply)
	resp := done(t, evs)
	assert.Len(t, srv.Requests(), 2, "the broken attempt and the retry")
	retries := retriesOf(evs)
	require.Len(t, retries, 1, "one retry: %s", describe(evs))
	e := errorOf(t, retries[0])
	assert.Contains(t, []llm.ErrorKind{llm.ErrNetwork, llm.ErrTruncated}, e.Kind, "a reset is a network fault: %v", e)
	before, after := splitAtRetry(evs)
	partial := textOf(before)
	assert.NotEmpty(t, partial, "text streamed before the reset (the fixture's first half holds some)")
	assert.True(t, strings.HasPrefix(h.fx.Text.Text, partial), "the partial text is a prefix of the answer")
	assert.Equal(t, h.fx.Text.Text, textOf(after))
	assert.Equal(t, h.fx.Text.Text, resp.Message.Text, "the partial answer is void; the response is the retried one")
}

// final checks a failure that must not be retried.
func (h harness) final(t *testing.T, c Case, kind llm.ErrorKind) {
	evs, srv, sl := h.stream(t, c.Reply, h.fx.Text.Reply)
	e := failed(t, evs)
	assert.Len(t, srv.Requests(), 1, "never retried")
	assert.Empty(t, retriesOf(evs))
	assert.Empty(t, sl.Durations())
	assert.Equal(t, kind, e.Kind, "kind of %v", e)
	assert.False(t, e.Retryable())
	assert.Equal(t, h.p.Name, e.Provider)
	assert.NotEmpty(t, e.Msg, "the provider's message")
	h.exitCode(t, evs)
}

func (h harness) exhausted(t *testing.T) {
	replies := make([]Reply, llm.DefaultMaxAttempts+1)
	for i := range replies {
		replies[i] = h.fx.ServerError.Reply
	}
	evs, srv, sl := h.stream(t, replies...)
	e := failed(t, evs)
	assert.Len(t, srv.Requests(), llm.DefaultMaxAttempts, "attempts are capped")
	assert.Len(t, retriesOf(evs), llm.DefaultMaxAttempts-1)
	assert.Len(t, sl.Durations(), llm.DefaultMaxAttempts-1)
	assert.Equal(t, llm.ErrServer, e.Kind)
	assert.Contains(t, evs[len(evs)-1].Err.Error(), fmt.Sprintf("gave up after %d attempts", llm.DefaultMaxAttempts))
	h.exitCode(t, evs)
}

func (h harness) exitCode(t *testing.T, evs []llm.Event) {
	if h.p.ExitCode != nil {
		assert.Equal(t, h.p.ExitProvider, h.p.ExitCode(evs[len(evs)-1].Err), "a provider failure exits as one")
	}
}

// done returns the response of a stream that must have succeeded.
func done(t *testing.T, evs []llm.Event) *llm.Response {
	t.Helper()
	last := evs[len(evs)-1]
	require.Equal(t, llm.EventDone, last.Kind, "the stream succeeds: %s", describe(evs))
	require.NotNil(t, last.Response)
	return last.Response
}

// failed returns the error of a stream that must have failed.
func failed(t *testing.T, evs []llm.Event) *llm.Error {
	t.Helper()
	last := evs[len(evs)-1]
	require.Equal(t, llm.EventError, last.Kind, "the stream fails: %s", describe(evs))
	for _, ev := range evs {
		assert.NotEqual(t, llm.EventDone, ev.Kind, "no response from a failed stream")
	}
	return errorOf(t, last)
}

func count(evs []llm.Event, kind llm.EventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func textOf(evs []llm.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == llm.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func callsOf(evs []llm.Event) []llm.ToolCall {
	var out []llm.ToolCall
	for _, ev := range evs {
		if ev.Kind == llm.EventToolCall {
			out = append(out, *ev.Call)
		}
	}
	return out
}

func retriesOf(evs []llm.Event) []llm.Event {
	var out []llm.Event
	for _, ev := range evs {
		if ev.Kind == llm.EventRetry {
			out = append(out, ev)
		}
	}
	return out
}

// splitAtRetry returns the events before and after the last retry.
func splitAtRetry(evs []llm.Event) ([]llm.Event, []llm.Event) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == llm.EventRetry {
			return evs[:i], evs[i+1:]
		}
	}
	return nil, evs
}

// checkCalls compares calls with what the fixture set expects.
func checkCalls(t *testing.T, want []Call, got []llm.ToolCall) {
	t.Helper()
	require.Len(t, got, len(want), "tool calls")
	for i, w := range want {
		assert.Equal(t, w.Name, got[i].Name, "call %d name", i)
		if w.RawArgs != "" {
			assert.Equal(t, w.RawArgs, string(got[i].Args), "call %d arguments, byte for byte", i)
			continue
		}
		assert.JSONEq(t, string(w.Args), string(got[i].Args), "call %d arguments", i)
	}
}
