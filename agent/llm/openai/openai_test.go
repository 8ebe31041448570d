package openai_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"decode/agent/llm"
	"decode/agent/llm/openai"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captured is what the client sent.
type captured struct {
	method string
	path   string
	header http.Header
	body   []byte
}

// server starts a local server that records each request and answers it
// with respond. Requests arrive on the returned channel.
func server(t *testing.T, respond http.HandlerFunc) (*httptest.Server, <-chan captured) {
	t.Helper()
	reqs := make(chan captured, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reqs <- captured{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body}
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, reqs
}

// sse answers with a fixture from testdata as an event stream.
func sse(t *testing.T, fixture string) http.HandlerFunc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	require.NoError(t, err, "read fixture")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data)
	}
}

// trickle answers with a fixture a few bytes per write, flushed, so that
// lines and events are split across reads.
func trickle(t *testing.T, fixture string) http.HandlerFunc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	require.NoError(t, err, "read fixture")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := 0; i < len(data); i += 7 {
			_, _ = w.Write(data[i:min(i+7, len(data))])
			w.(http.Flusher).Flush()
		}
	}
}

// jsonError answers with an HTTP error and a body.
func jsonError(status int, body string, header map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func newModel(t *testing.T, srv *httptest.Server, provider string) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{
		APIKey:     "sk-test-123",
		BaseURL:    srv.URL + "/v1",
		Model:      "gpt-4.1-mini",
		Provider:   provider,
		HTTPClient: srv.Client(),
	})
	require.NoError(t, err, "new model")
	return m
}

func collect(m llm.Model, req llm.Request) []llm.Event {
	var evs []llm.Event
	for ev := range m.Stream(context.Background(), req) {
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

func texts(evs []llm.Event, kind llm.EventKind) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev.Text)
		}
	}
	return out
}

// lastErr returns the *llm.Error that ended a stream.
func lastErr(t *testing.T, evs []llm.Event) *llm.Error {
	t.Helper()
	require.NotEmpty(t, evs, "events")
	last := evs[len(evs)-1]
	require.Equal(t, llm.EventError, last.Kind, "the stream ends in an error")
	e := llm.AsError(last.Err)
	require.NotNil(t, e, "the error is an *llm.Error: %v", last.Err)
	return e
}

func done(t *testing.T, evs []llm.Event) *llm.Response {
	t.Helper()
	require.NotEmpty(t, evs, "events")
	last := evs[len(evs)-1]
	require.Equal(t, llm.EventDone, last.Kind, "the stream ends done: %v", last.Err)
	return last.Response
}

var hello = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

func TestStreamText(t *testing.T) {
	for name, respond := range map[string]func(*testing.T, string) http.HandlerFunc{
		"whole": sse, "trickled": trickle,
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := server(t, respond(t, "text.sse"))
			evs := collect(newModel(t, srv, ""), hello)

			assert.Equal(t, []string{"Hello", ", wor", "ld! éè"}, texts(evs, llm.EventText), "deltas in order")
			resp := done(t, evs)
			assert.Equal(t, llm.Message{Role: llm.RoleAssistant, Text: "Hello, world! éè"}, resp.Message)
			assert.Equal(t, llm.StopEnd, resp.Stop)
			assert.Equal(t, llm.Usage{Input: 1530, Output: 5, CacheRead: 1280}, resp.Usage, "usage from the usage chunk")
			assert.Equal(t, "gpt-4.1-mini-2025-04-14", resp.Model, "model as reported")
		})
	}
}

func TestStreamToolCallSplitAcrossDeltas(t *testing.T) {
	srv, _ := server(t, sse(t, "tool_call.sse"))
	evs := collect(newModel(t, srv, ""), hello)

	require.Equal(t, []llm.EventKind{llm.EventToolCall, llm.EventDone}, kinds(evs))
	call := evs[0].Call
	assert.Equal(t, "call_Xk2mP9aQ", call.ID)
	assert.Equal(t, "read", call.Name)
	assert.JSONEq(t, `{"path":"session/entry.go","offset":40}`, string(call.Args), "arguments joined from pieces")
	resp := done(t, evs)
	assert.Equal(t, llm.StopToolUse, resp.Stop)
	assert.Equal(t, []llm.ToolCall{*call}, resp.Message.Calls, "the response holds the same call")
	assert.Equal(t, llm.Usage{Input: 812, Output: 23}, resp.Usage)
}

func TestStreamParallelToolCalls(t *testing.T) {
	srv, _ := server(t, trickle(t, "parallel_tool_calls.sse"))
	evs := collect(newModel(t, srv, ""), hello)

	require.Equal(t, []llm.EventKind{llm.EventToolCall, llm.EventToolCall, llm.EventDone}, kinds(evs))
	assert.Equal(t, "call_A1", evs[0].Call.ID)
	assert.Equal(t, "glob", evs[0].Call.Name)
	assert.JSONEq(t, `{"pattern":"**/*.go"}`, string(evs[0].Call.Args))
	assert.Equal(t, "call_B2", evs[1].Call.ID)
	assert.Equal(t, "grep", evs[1].Call.Name)
	assert.JSONEq(t, `{"pattern":"func New"}`, string(evs[1].Call.Args))
	resp := done(t, evs)
	assert.Len(t, resp.Message.Calls, 2)
	assert.Equal(t, llm.StopToolUse, resp.Stop)
	assert.Equal(t, llm.Usage{Input: 640, Output: 48, CacheRead: 512}, resp.Usage)
}

func TestStreamOpenRouterCommentLines(t *testing.T) {
	for name, respond := range map[string]func(*testing.T, string) http.HandlerFunc{
		"whole": sse, "trickled": trickle,
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := server(t, respond(t, "openrouter_comment.sse"))
			m := newModel(t, srv, "openrouter")
			evs := collect(m, hello)

			assert.Equal(t, "openrouter:gpt-4.1-mini", m.Name())
			assert.Equal(t, []string{"Paris", " is the capital."}, texts(evs, llm.EventText))
			resp := done(t, evs)
			assert.Equal(t, llm.StopEnd, resp.Stop, "finish_reason in the text chunk; null in the usage chunk")
			assert.Equal(t, llm.Usage{Input: 31, Output: 7}, resp.Usage, "usage chunk with non-empty choices")
		})
	}
}

func TestStreamReasoningContent(t *testing.T) {
	srv, _ := server(t, sse(t, "deepseek_reasoning.sse"))
	evs := collect(newModel(t, srv, "deepseek"), hello)

	assert.Equal(t, []string{"Two plus two", " is four."}, texts(evs, llm.EventThinking))
	assert.Equal(t, []string{"4"}, texts(evs, llm.EventText))
	resp := done(t, evs)
	assert.Equal(t, "4", resp.Message.Text, "reasoning is not part of the answer")
	assert.Equal(t, llm.StopMaxTokens, resp.Stop, "finish_reason length")
}

func TestStreamTruncated(t *testing.T) {
	srv, _ := server(t, sse(t, "truncated.sse"))
	evs := collect(newModel(t, srv, ""), hello)

	assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventError}, kinds(evs),
		"no tool call and no Done from a cut stream")
	e := lastErr(t, evs)
	assert.Equal(t, llm.ErrTruncated, e.Kind)
	assert.True(t, e.Retryable())
	assert.Equal(t, "openai", e.Provider)
}

func TestStreamMalformedChunk(t *testing.T) {
	srv, _ := server(t, sse(t, "malformed.sse"))
	evs := collect(newModel(t, srv, ""), hello)

	assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventError}, kinds(evs))
	e := lastErr(t, evs)
	assert.Equal(t, llm.ErrMalformed, e.Kind)
	assert.False(t, e.Retryable())
}

func TestStreamErrorEvent(t *testing.T) {
	tests := []struct {
		fixture string
		msg     string
	}{
		{"error_event.sse", "Sorry about that"},
		// Without the comment filter go-openai reports this one as a
		// JSON syntax error, losing the provider's message.
		{"error_after_comment.sse", "Upstream provider is overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			srv, _ := server(t, sse(t, tt.fixture))
			evs := collect(newModel(t, srv, ""), hello)

			assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventError}, kinds(evs))
			e := lastErr(t, evs)
			assert.Equal(t, llm.ErrServer, e.Kind, "an error event after HTTP 200")
			assert.True(t, e.Retryable())
			assert.Contains(t, e.Msg, tt.msg, "the provider's message")
		})
	}
}

func TestStreamInvalidToolArgumentsPassThrough(t *testing.T) {
	const args = `{"path": "main.go", "old": 'x'`
	srv, reqs := server(t, sse(t, "invalid_args.sse"))
	m := newModel(t, srv, "")
	evs := collect(m, hello)

	require.Equal(t, []llm.EventKind{llm.EventToolCall, llm.EventDone}, kinds(evs))
	assert.Equal(t, args, string(evs[0].Call.Args), "arguments verbatim")
	<-reqs

	// Sent back in the next request exactly as the model wrote them.
	next := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "edit it"},
		done(t, evs).Message,
		{Role: llm.RoleTool, Results: []llm.ToolResult{
			{CallID: "call_Bad1", Name: "edit", Content: "invalid JSON arguments", IsError: true},
		}},
	}}
	collect(m, next)
	body := decodeBody(t, (<-reqs).body)
	require.Len(t, body.Messages, 3)
	require.Len(t, body.Messages[1].ToolCalls, 1)
	assert.Equal(t, args, body.Messages[1].ToolCalls[0].Function.Arguments)
}

func TestStreamIncrementalAndCancel(t *testing.T) {
	chunks, err := os.ReadFile(filepath.Join("testdata", "text.sse"))
	require.NoError(t, err)
	first := bytes.Join(bytes.SplitAfter(chunks, []byte("\n\n"))[:2], nil) // the role chunk and "Hello"
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		// Hold the stream open until the client gives up; the fallback
		// ends it (as truncated) if the client waited for the whole body.
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []llm.Event
	for ev := range newModel(t, srv, "").Stream(ctx, hello) {
		evs = append(evs, ev)
		if ev.Kind == llm.EventText {
			cancel()
		}
	}

	require.Equal(t, []llm.EventKind{llm.EventText, llm.EventError}, kinds(evs), "text arrives before the stream ends")
	assert.Equal(t, "Hello", evs[0].Text)
	assert.ErrorIs(t, evs[1].Err, context.Canceled)
	assert.Nil(t, llm.AsError(evs[1].Err), "a cancellation is not a provider error")
}

func TestStreamCancelledBeforeRequest(t *testing.T) {
	srv, _ := server(t, sse(t, "text.sse"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var evs []llm.Event
	for ev := range newModel(t, srv, "").Stream(ctx, hello) {
		evs = append(evs, ev)
	}
	require.Equal(t, []llm.EventKind{llm.EventError}, kinds(evs))
	assert.ErrorIs(t, evs[0].Err, context.Canceled)
}

func TestStreamConsumerStopsEarly(t *testing.T) {
	srv, _ := server(t, sse(t, "text.sse"))
	n := 0
	for range newModel(t, srv, "").Stream(context.Background(), hello) {
		n++
		break
	}
	assert.Equal(t, 1, n, "no yield after the consumer stopped")
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		header     map[string]string
		kind       llm.ErrorKind
		retryAfter time.Duration
		msg        string
	}{
		{
			name: "auth", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-test***123.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			kind: llm.ErrAuth, msg: "Incorrect API key provided",
		},
		{
			name: "quota", status: 429,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			kind: llm.ErrQuota, msg: "exceeded your current quota",
		},
		{
			name: "rate limit with Retry-After", status: 429, header: map[string]string{"Retry-After": "2"},
			body: `{"error":{"message":"Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			kind: llm.ErrRateLimit, retryAfter: 2 * time.Second, msg: "Rate limit reached",
		},
		{
			name: "rate limit with retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			body: `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			kind: llm.ErrRateLimit, retryAfter: 1500 * time.Millisecond,
		},
		{
			name: "server", status: 500,
			body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			kind: llm.ErrServer, msg: "The server had an error",
		},
		{
			name: "gateway html", status: 502,
			body: "<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>",
			kind: llm.ErrServer, msg: "502 Bad Gateway",
		},
		{
			name: "overloaded", status: 529, body: `{"error":{"message":"Overloaded","type":"overloaded_error"}}`,
			kind: llm.ErrOverloaded, msg: "Overloaded",
		},
		{
			name: "model not found", status: 404,
			body: `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			kind: llm.ErrNotFound, msg: "does not exist",
		},
		{
			name: "context length exceeded", status: 400,
			body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			kind: llm.ErrContextTooLong, msg: "maximum context length",
		},
		{
			name: "vllm context length", status: 400,
			body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			kind: llm.ErrContextTooLong, msg: "maximum context length",
		},
		{
			name: "llama.cpp context size", status: 400,
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":40000,"n_ctx":32768}}`,
			kind: llm.ErrContextTooLong, msg: "context size",
		},
		{
			name: "bad request", status: 400,
			body: `{"error":{"message":"Invalid schema for function 'read'.","type":"invalid_request_error","param":"tools[0].function.parameters","code":"invalid_function_parameters"}}`,
			kind: llm.ErrBadRequest, msg: "Invalid schema",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := server(t, jsonError(tt.status, tt.body, tt.header))
			evs := collect(newModel(t, srv, ""), hello)

			require.Len(t, evs, 1, "only the error event")
			e := lastErr(t, evs)
			assert.Equal(t, tt.kind, e.Kind)
			assert.Equal(t, tt.status, e.Status)
			assert.Equal(t, tt.retryAfter, e.RetryAfter)
			assert.Contains(t, e.Msg, tt.msg)
			assert.Equal(t, "openai", e.Provider)
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	at := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	srv, _ := server(t, jsonError(503, `{"error":{"message":"busy","type":"server_error"}}`,
		map[string]string{"Retry-After": at}))
	e := lastErr(t, collect(newModel(t, srv, ""), hello))

	assert.Equal(t, llm.ErrServer, e.Kind)
	assert.InDelta(t, 30*time.Second, e.RetryAfter, float64(2*time.Second), "delay until the date")
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close(), "nothing listens on addr now")

	m, err := openai.New(openai.Config{BaseURL: "http://" + addr + "/v1", Model: "qwen3", Provider: "ollama"})
	require.NoError(t, err)
	e := lastErr(t, collect(m, hello))
	assert.Equal(t, llm.ErrNetwork, e.Kind)
	assert.True(t, e.Retryable())
	assert.Equal(t, "ollama", e.Provider)
}

func TestConnectionResetMidStream(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		_, _ = buf.WriteString("10\r\ndata: {\"id\":\"x\"\r\n")
		_ = buf.Flush()
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with a reset
		}
		_ = conn.Close()
	})
	e := lastErr(t, collect(newModel(t, srv, ""), hello))
	assert.True(t, e.Retryable(), "a broken connection is retried, got %s", e.Kind)
	assert.Contains(t, []llm.ErrorKind{llm.ErrNetwork, llm.ErrTruncated}, e.Kind)
}

func TestWithRetryRetriesServerError(t *testing.T) {
	text := sse(t, "text.sse")
	n := 0
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		n++ // requests arrive one at a time here
		if n == 1 {
			jsonError(500, `{"error":{"message":"oops","type":"server_error"}}`, map[string]string{"Retry-After": "1"})(w, r)
			return
		}
		text(w, r)
	})
	var slept []time.Duration
	m := llm.WithRetry(newModel(t, srv, ""), llm.RetryPolicy{
		Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil },
		Rand:  func() float64 { return 0 },
	})
	evs := collect(m, hello)

	assert.Equal(t, llm.EventRetry, evs[0].Kind)
	assert.Equal(t, []time.Duration{time.Second}, slept, "Retry-After honoured")
	assert.Equal(t, "Hello, world! éè", done(t, evs).Message.Text)
}
