package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"decode/agent/llm"

	goopenai "github.com/sashabaranov/go-openai"
)

// phase says where an error happened, which decides the kind of an error
// that carries no status.
type phase int

const (
	phaseRequest phase = iota // building or sending the request
	phaseStream               // reading the event stream after HTTP 200
)

// classify turns an error from the SDK or the transport into an *llm.Error.
// The caller handles context cancellation first.
func classify(provider string, ph phase, err error, retryAfter time.Duration) *llm.Error {
	e := &llm.Error{Provider: provider, Err: err, RetryAfter: retryAfter}
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	// RequestError first: it may wrap an APIError that lacks the status.
	case errors.As(err, &reqErr):
		e.Status = reqErr.HTTPStatusCode
		e.Kind = llm.KindForStatus(reqErr.HTTPStatusCode)
		e.Msg = bodyMessage(reqErr)
		if (e.Status == 400 || e.Status == 413) && llm.TooLongText(string(reqErr.Body)) {
			e.Kind = llm.ErrContextTooLong
		}
	case errors.As(err, &apiErr):
		e.Status = apiErr.HTTPStatusCode
		e.Kind = apiErrorKind(apiErr)
		e.Msg = apiErr.Message
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		e.Kind = llm.ErrMalformed
		e.Msg = fmt.Sprintf("decode stream chunk: %v", err)
	case errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		e.Kind = llm.ErrMalformed
	case errors.Is(err, io.ErrUnexpectedEOF):
		e.Kind = llm.ErrTruncated
		e.Msg = "the connection closed in the middle of the stream"
	case isNetwork(err):
		e.Kind = llm.ErrNetwork
	case ph == phaseStream:
		// Any other failure to read an HTTP 200 body is a broken transfer.
		e.Kind = llm.ErrNetwork
	default:
		// Client-side validation in the SDK (model not usable with chat
		// completions, parameters a reasoning model rejects) or a request
		// that does not encode: sending it again cannot help.
		e.Kind = llm.ErrBadRequest
	}
	if e.Kind != llm.ErrRateLimit && e.Kind != llm.ErrOverloaded && e.Kind != llm.ErrServer {
		e.RetryAfter = 0
	}
	return e
}

// apiErrorKind maps an error object from the API. With an HTTP status it
// follows the status, except for an exhausted quota, which OpenAI reports as
// 429 like a rate limit. An error event inside an HTTP 200 stream has no
// status: its code or type decides, and an unknown one counts as a server
// failure, which is retried.
func apiErrorKind(e *goopenai.APIError) llm.ErrorKind {
	code := fmt.Sprint(e.Code)
	if code == "insufficient_quota" || e.Type == "insufficient_quota" {
		return llm.ErrQuota
	}
	// OpenAI says "context_length_exceeded" (HTTP 400); compatible servers
	// use their own words or types (llama.cpp "exceed_context_size_error").
	if code == "context_length_exceeded" || e.Type == "exceed_context_size_error" ||
		(e.HTTPStatusCode == 400 || e.HTTPStatusCode == 413 || e.HTTPStatusCode == 0) && llm.TooLongText(e.Message) {
		return llm.ErrContextTooLong
	}
	if e.HTTPStatusCode != 0 {
		return llm.KindForStatus(e.HTTPStatusCode)
	}
	if n, ok := e.Code.(int); ok && n >= 400 && n < 600 {
		return llm.KindForStatus(n)
	}
	id := strings.ToLower(code + " " + e.Type)
	switch {
	case strings.Contains(id, "rate_limit"):
		return llm.ErrRateLimit
	case strings.Contains(id, "overloaded"):
		return llm.ErrOverloaded
	case strings.Contains(id, "authentication"), strings.Contains(id, "invalid_api_key"), strings.Contains(id, "permission"):
		return llm.ErrAuth
	case strings.Contains(id, "not_found"):
		return llm.ErrNotFound
	case strings.Contains(id, "invalid_request"):
		return llm.ErrBadRequest
	}
	return llm.ErrServer
}

// bodyMessage is what to show of an error response that is not a JSON error
// object (a proxy's HTML page, a plain-text 502).
func bodyMessage(e *goopenai.RequestError) string {
	const limit = 300
	body := strings.Join(strings.Fields(string(e.Body)), " ")
	if len(body) > limit {
		body = body[:limit] + "…"
	}
	if body == "" {
		return e.HTTPStatus
	}
	return body
}

// isNetwork reports whether err is a failure to reach the server or a
// connection that broke.
func isNetwork(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr)
}
