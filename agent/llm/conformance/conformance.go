// Package conformance is a test harness that runs the same scenarios over
// every provider adapter, through llm.WithRetry and a local HTTP server
// speaking the provider's wire format: a text answer, a tool call, two tool
// calls, invalid tool arguments, usage, and each fault decode must handle
// the same way everywhere (429 with Retry-After, 500 then success,
// overloaded, a connection reset mid-answer, an error event after HTTP 200,
// auth and quota errors, retries exhausted).
//
// A provider's fixture set is a conformance.json in its adapter's testdata/
// naming the recorded or hand-written responses beside it (see Fixtures);
// the test that runs it supplies only how to build the model against a base
// URL (see Provider). So a new provider is a folder plus a fixture set.
//
// The package imports nothing from the project but agent/llm; the tests
// that build real adapters live where the layering allows it (commands).
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// Fixtures is one provider's fixture set, the content of its
// testdata/conformance.json. Every scenario is required.
type Fixtures struct {
	// Model is the model name to build ("gpt-4.1-mini").
	Model string `json:"model"`
	// Path is the request path every request must use
	// ("/v1/chat/completions").
	Path string `json:"path"`

	// Text streams an answer in two or more text events, with usage.
	Text Case `json:"text"`
	// ToolCall is one tool call, its arguments split across events where
	// the wire format splits them.
	ToolCall Case `json:"tool_call"`
	// TwoCalls is a response with two tool calls.
	TwoCalls Case `json:"two_calls"`
	// InvalidArgs is a tool call whose arguments are not valid JSON: with
	// RawArgs, passed through verbatim for the tool to reject; with Kind
	// (a wire format that cannot carry invalid JSON, like Gemini's
	// MALFORMED_FUNCTION_CALL), a retryable error of that kind.
	InvalidArgs Case `json:"invalid_args"`
	// RateLimit is a 429 with a Retry-After of RetryAfter.
	RateLimit Case `json:"rate_limit"`
	// ServerError is a 500.
	ServerError Case `json:"server_error"`
	// Overloaded is the provider's overload response (529, or 503).
	Overloaded Case `json:"overloaded"`
	// ErrorEvent is an error sent inside a stream after HTTP 200, after
	// some text; Kind is the retryable kind it maps to.
	ErrorEvent Case `json:"error_event"`
	// Auth is a rejected key; Quota an exhausted quota or balance.
	Auth  Case `json:"auth"`
	Quota Case `json:"quota"`
	// ContextTooLong is the provider's answer to a prompt longer than the
	// model's context window, in its own wire format: never retried as is
	// (decode compacts the context, then sends it again).
	ContextTooLong Case `json:"context_too_long"`
}

// Case is one scenario: what the server sends and what the stream must
// show for it.
type Case struct {
	Reply Reply `json:"reply"`
	// Text is the whole answer text.
	Text string `json:"text,omitempty"`
	// Calls are the tool calls, in order.
	Calls []Call `json:"calls,omitempty"`
	// Usage, when set, is the response's usage.
	Usage *llm.Usage `json:"usage,omitempty"`
	// Kind is the llm.ErrorKind of a failure.
	Kind llm.ErrorKind `json:"kind,omitempty"`
	// RetryAfter is the delay a failure asks for ("7s").
	RetryAfter string `json:"retry_after,omitempty"`
}

// Call is an expected tool call: Args is compared as JSON, RawArgs byte for
// byte (for arguments that are not JSON).
type Call struct {
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	RawArgs string          `json:"raw_args,omitempty"`
}

// Reply is one canned HTTP response.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	// File, a file of the fixture directory, is served as an event stream.
	File string `json:"file,omitempty"`
	// Body is served as application/json when File is empty.
	Body string `json:"body,omitempty"`
	// Trickle writes File a few bytes at a time, flushed, so that lines
	// and events are split across reads.
	Trickle bool `json:"trickle,omitempty"`
	// Reset sends the first half of File's events and then resets the
	// connection, as a broken network does mid-answer.
	Reset bool `json:"reset,omitempty"`
	// Stall sends nothing at all ("headers"), or the first half of File's
	// events ("half"), and then stays silent until the client gives up,
	// as a stalled provider or proxy does.
	Stall string `json:"stall,omitempty"`
}

// Provider says how to test one provider.
type Provider struct {
	// Name is the provider's name in model names and errors ("openai").
	Name string
	// Dir is the directory holding conformance.json and its files,
	// usually the adapter's testdata.
	Dir string
	// New builds the model, without retries, against base: the local
	// server's URL (http://127.0.0.1:PORT, no path).
	New func(t *testing.T, base, model string) llm.Model
	// ExitCode, when set, maps a run's final error to decode's exit code;
	// provider failures must map to ExitProvider.
	ExitCode     func(error) int
	ExitProvider int
}

// Load reads the fixture set in dir and checks that every scenario is
// there.
func Load(t testing.TB, dir string) Fixtures {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "conformance.json"))
	require.NoError(t, err, "read the provider's fixture set")
	var fx Fixtures
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&fx), "parse %s/conformance.json", dir)
	require.NotEmpty(t, fx.Model, "conformance.json: model")
	require.NotEmpty(t, fx.Path, "conformance.json: path")
	for name, c := range fx.cases() {
		require.False(t, c.Reply.File == "" && c.Reply.Body == "", "conformance.json: scenario %q has no reply", name)
		if c.Reply.File != "" {
			_, err := os.Stat(filepath.Join(dir, c.Reply.File))
			require.NoError(t, err, "conformance.json: scenario %q", name)
		}
	}
	require.NotEmpty(t, fx.Text.Text, "conformance.json: text.text")
	require.Len(t, fx.ToolCall.Calls, 1, "conformance.json: tool_call.calls")
	require.Len(t, fx.TwoCalls.Calls, 2, "conformance.json: two_calls.calls")
	require.NotEmpty(t, fx.ErrorEvent.Kind, "conformance.json: error_event.kind")
	_, err = time.ParseDuration(fx.RateLimit.RetryAfter)
	require.NoError(t, err, "conformance.json: rate_limit.retry_after")
	return fx
}

func (fx Fixtures) cases() map[string]Case {
	return map[string]Case{
		"text": fx.Text, "tool_call": fx.ToolCall, "two_calls": fx.TwoCalls, "invalid_args": fx.InvalidArgs,
		"rate_limit": fx.RateLimit, "server_error": fx.ServerError, "overloaded": fx.Overloaded,
		"error_event": fx.ErrorEvent, "auth": fx.Auth, "quota": fx.Quota,
		"context_too_long": fx.ContextTooLong,
	}
}

// Sleeps stands in for the retry policy's clock: it records each backoff
// instead of waiting, so retries cost no time in tests.
type Sleeps struct {
	d []time.Duration
}

// Policy is a retry policy with the default attempts, no jitter and s as
// its clock. A stream is consumed by one goroutine, so s needs no lock.
func (s *Sleeps) Policy() llm.RetryPolicy {
	return llm.RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error {
			s.d = append(s.d, d)
			return ctx.Err()
		},
		Rand: func() float64 { return 0 },
	}
}

// Durations are the backoffs asked for so far.
func (s *Sleeps) Durations() []time.Duration { return s.d }

// errorOf returns the *llm.Error of an event's error, failing the test
// when there is none.
func errorOf(t *testing.T, ev llm.Event) *llm.Error {
	t.Helper()
	e := llm.AsError(ev.Err)
	require.NotNil(t, e, "an *llm.Error in the chain of %v", ev.Err)
	return e
}

// describe prints events for failure messages.
func describe(evs []llm.Event) string {
	s := ""
	for _, ev := range evs {
		switch ev.Kind {
		case llm.EventText:
			s += fmt.Sprintf("text(%q) ", ev.Text)
		case llm.EventThinking:
			s += "thinking "
		case llm.EventToolCall:
			s += fmt.Sprintf("call(%s) ", ev.Call.Name)
		case llm.EventRetry:
			s += fmt.Sprintf("retry(%d: %v) ", ev.Attempt, ev.Err)
		case llm.EventDone:
			s += "done "
		case llm.EventError:
			s += fmt.Sprintf("error(%v) ", ev.Err)
		}
	}
	return s
}

var errNoReply = errors.New("conformance server: no reply left for this request")
