package gemini

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

	"google.golang.org/genai"

	"decode/agent/llm"
)

// classify turns a stream failure into an *llm.Error. A cancelled context
// is returned as itself (wrapped), so that no retry policy mistakes the
// user's interrupt for a network fault.
func classify(ctx context.Context, err error, w *wire) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return apiError(apiErr, w.header)
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) && apiErrPtr != nil {
		return apiError(*apiErrPtr, w.header)
	}
	if isNetwork(err) {
		return &llm.Error{Kind: llm.ErrNetwork, Provider: provider, Err: err}
	}
	if w.readErr != nil {
		return &llm.Error{Kind: llm.ErrNetwork, Provider: provider, Msg: "stream cut", Err: w.readErr}
	}
	return &llm.Error{Kind: llm.ErrMalformed, Provider: provider, Err: err}
}

// apiError classifies an error response, or an error object sent inside a
// stream that began with HTTP 200.
func apiError(e genai.APIError, h http.Header) *llm.Error {
	out := &llm.Error{Provider: provider, Status: e.Code, Msg: e.Message, Err: e}
	if out.Msg == "" {
		out.Msg = e.Status
	}
	out.Kind = llm.KindForStatus(e.Code)
	msg := strings.ToLower(e.Message)
	switch {
	case e.Code == 0:
		out.Kind = llm.ErrServer
	case reason(e) == "API_KEY_INVALID" || strings.Contains(msg, "api key not valid"):
		out.Kind = llm.ErrAuth
	case e.Status == "RESOURCE_EXHAUSTED" || e.Code == 429:
		out.Kind = llm.ErrRateLimit
		if exhausted(e, msg) {
			out.Kind = llm.ErrQuota
		}
	case e.Code == 400 && llm.TooLongText(msg):
		// "The input token count (1196265) exceeds the maximum number of
		// tokens allowed (1048576)." with status INVALID_ARGUMENT.
		out.Kind = llm.ErrContextTooLong
	case e.Code == 400 && strings.Contains(msg, "billing"):
		out.Kind = llm.ErrQuota // e.g. free tier unavailable: enable billing
	case e.Code == 503 && strings.Contains(msg, "overloaded"):
		out.Kind = llm.ErrOverloaded
	}
	out.RetryAfter = llm.RetryAfter(h, time.Now())
	if out.RetryAfter == 0 {
		out.RetryAfter = retryDelay(e)
	}
	return out
}

// exhausted tells a quota that waiting a minute does not refill (a daily
// limit, a limit of 0, a spending cap or used-up credits) from a rate
// limit. Both come as RESOURCE_EXHAUSTED, and the per-minute message too
// says "check your plan and billing details".
func exhausted(e genai.APIError, msg string) bool {
	for _, word := range []string{"limit: 0", "spending cap", "credits are depleted", "prepayment", "billing account"} {
		if strings.Contains(msg, word) {
			return true
		}
	}
	for _, d := range e.Details {
		violations, _ := d["violations"].([]any)
		for _, v := range violations {
			vm, _ := v.(map[string]any)
			id, _ := vm["quotaId"].(string)
			if strings.Contains(id, "PerDay") {
				return true
			}
		}
	}
	return false
}

// reason returns the ErrorInfo reason of an error's details.
func reason(e genai.APIError) string {
	for _, d := range e.Details {
		if r, ok := d["reason"].(string); ok && r != "" {
			return r
		}
	}
	return ""
}

// retryDelay reads google.rpc.RetryInfo ("retryDelay": "27s").
func retryDelay(e genai.APIError) time.Duration {
	for _, d := range e.Details {
		s, _ := d["retryDelay"].(string)
		if s == "" {
			continue
		}
		if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
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
