package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"decode/agent/llm"
)

// classify turns a stream failure into an *llm.Error. A cancelled context
// is returned as itself (wrapped), so that no retry policy mistakes the
// user's interrupt for a network fault.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return apiError(apiErr)
	}
	if isNetwork(err) {
		return &llm.Error{Kind: llm.ErrNetwork, Provider: provider, Err: err}
	}
	return &llm.Error{Kind: llm.ErrMalformed, Provider: provider, Err: err}
}

// apiError classifies an error response, or an `event: error` that came
// after HTTP 200 (its StatusCode is then 200 and only the type tells).
func apiError(e *sdk.Error) *llm.Error {
	out := &llm.Error{Provider: provider, Status: e.StatusCode, Msg: e.Message, Err: e}
	if out.Msg == "" {
		out.Msg = strings.TrimSpace(e.RawJSON())
	}
	if out.Msg == "" {
		out.Msg = http.StatusText(e.StatusCode)
	}
	if e.StatusCode < 300 {
		out.Status = 0
		out.Kind = kindForType(string(e.Type()))
	} else {
		out.Kind = llm.KindForStatus(e.StatusCode)
		if e.Type() == "overloaded_error" {
			out.Kind = llm.ErrOverloaded
		}
	}
	if isQuota(e) {
		out.Kind = llm.ErrQuota
	}
	if tooLong(e) {
		out.Kind = llm.ErrContextTooLong
	}
	if e.Response != nil {
		out.RetryAfter = llm.RetryAfter(e.Response.Header, time.Now())
	}
	return out
}

// kindForType maps the error types of the API's error objects.
func kindForType(t string) llm.ErrorKind {
	switch t {
	case "overloaded_error":
		return llm.ErrOverloaded
	case "rate_limit_error":
		return llm.ErrRateLimit
	case "authentication_error", "permission_error":
		return llm.ErrAuth
	case "billing_error":
		return llm.ErrQuota
	case "not_found_error":
		return llm.ErrNotFound
	case "invalid_request_error":
		return llm.ErrBadRequest
	default: // api_error, timeout_error and types added later
		return llm.ErrServer
	}
}

// isQuota reports an exhausted balance or spend limit, which waiting does
// not fix. The API reports a low credit balance as a 400.
func isQuota(e *sdk.Error) bool {
	if e.Type() == "billing_error" {
		return true
	}
	if code := string(e.ErrorCode()); strings.Contains(code, "spend_limit") {
		return true
	}
	msg := strings.ToLower(e.Message)
	return strings.Contains(msg, "credit balance") || strings.Contains(msg, "billing")
}

// tooLong reports a prompt longer than the context window: HTTP 400
// invalid_request_error "prompt is too long: 208310 tokens > 200000
// maximum", or 413 request_too_large for a request past the size cap.
func tooLong(e *sdk.Error) bool {
	if e.StatusCode == 413 || e.Type() == "request_too_large" {
		return true
	}
	return e.Type() == "invalid_request_error" && llm.TooLongText(e.Message)
}

// isNetwork reports a transport failure: a refused or reset connection, or
// a body cut off mid-read.
func isNetwork(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}
