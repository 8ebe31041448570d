package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind classifies a provider failure so that one retry policy and one
// exit-code table serve every provider.
type ErrorKind string

// Kinds of provider failure.
const (
	ErrAuth       ErrorKind = "auth"        // bad or missing credentials: never retried
	ErrQuota      ErrorKind = "quota"       // exhausted quota or billing: never retried
	ErrRateLimit  ErrorKind = "rate_limit"  // 429: retried after backoff
	ErrOverloaded ErrorKind = "overloaded"  // 529 or an overloaded error event: retried
	ErrServer     ErrorKind = "server"      // 5xx: retried
	ErrNetwork    ErrorKind = "network"     // connection refused or reset: retried
	ErrTruncated  ErrorKind = "truncated"   // the stream ended before the response was complete: retried
	ErrMalformed  ErrorKind = "malformed"   // the provider sent data that does not parse
	ErrBadRequest ErrorKind = "bad_request" // 4xx other than the above: not retried
	ErrNotFound   ErrorKind = "not_found"   // unknown model or endpoint: not retried
	ErrConfig     ErrorKind = "config"      // decode cannot build the client (no key, bad model name)
	// ErrContextTooLong says the request is longer than the model's context
	// window. Sending it again cannot help; compacting the context can.
	ErrContextTooLong ErrorKind = "context_too_long"
)

// Error is a provider failure.
type Error struct {
	Kind     ErrorKind
	Provider string
	// Status is the HTTP status, or 0 when none applies.
	Status int
	// RetryAfter is the delay the provider asked for, or 0.
	RetryAfter time.Duration
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Provider, e.Kind, e.Status, msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Provider, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same request may succeed when sent again.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimit, ErrOverloaded, ErrServer, ErrNetwork, ErrTruncated:
		return true
	}
	return false
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// TooLongText reports whether an error message from a provider, or from
// an OpenAI-compatible server (vLLM, llama.cpp, LiteLLM, OpenRouter),
// says the prompt does not fit the model's context window. Adapters use it
// beside the codes of their own wire format.
func TooLongText(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range tooLongPhrases {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// tooLongPhrases are how providers word a context overflow: OpenAI and
// vLLM ("maximum context length is 128000 tokens"), Anthropic ("prompt is
// too long: 208310 tokens > 200000 maximum"), Gemini ("The input token
// count (1196265) exceeds the maximum number of tokens allowed"),
// llama.cpp ("exceeds the available context size"), OpenRouter and others.
var tooLongPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"prompt is too long",
	"exceeds the maximum number of tokens",
	"exceeds the available context size",
	"exceed_context_size",
	"context window",
	"too many tokens",
	"input is too long",
	"reduce the length of the messages",
}

// KindForStatus maps an HTTP status to an ErrorKind.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return ErrAuth
	case status == 402:
		return ErrQuota
	case status == 404:
		return ErrNotFound
	case status == 429:
		return ErrRateLimit
	case status == 529:
		return ErrOverloaded
	case status >= 500:
		return ErrServer
	default:
		return ErrBadRequest
	}
}
