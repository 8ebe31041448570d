package llm

import (
	"errors"
	"fmt"
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
