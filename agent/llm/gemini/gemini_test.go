package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// reply is one canned HTTP response of the fake API.
type reply struct {
	status int
	header map[string]string
	file   string // testdata file served as text/event-stream
	body   string // served as application/json when file is empty
	cut    bool   // drop the connection after the body, mid-stream
}

// request is what genai sent.
type request struct {
	method, path, query string
	header              http.Header
	body                map[string]any
}

// fakeAPI is a local server speaking the Gemini API wire format.
type fakeAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []request
}

func newFakeAPI(t *testing.T, replies ...reply) *fakeAPI {
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	if len(f.replies) == 0 {
		f.mu.Unlock()
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"code":400,"message":"no reply left","status":"INVALID_ARGUMENT"}}`)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()

	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	payload := []byte(rep.body)
	if rep.file != "" {
		b, err := os.ReadFile(filepath.Join("testdata", rep.file))
		if err != nil {
			f.t.Errorf("fixture: %v", err)
		}
		payload = b
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	status := rep.status
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	_, _ = w.Write(payload)
	if rep.cut {
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // closes the connection without ending the chunked body
	}
}

func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func (f *fakeAPI) model(t *testing.T, name string) *Model {
	m, err := New(context.Background(), Config{APIKey: "AIza-test-key", BaseURL: f.srv.URL, Model: name})
	require.NoError(t, err)
	return m
}

func events(m *Model, req llm.Request) []llm.Event {
	var out []llm.Event
	for ev := range m.Stream(context.Background(), req) {
		out = append(out, ev)
	}
	return out
}

func last(t *testing.T, evs []llm.Event) llm.Event {
	require.NotEmpty(t, evs, "stream yielded nothing")
	return evs[len(evs)-1]
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

func calls(evs []llm.Event) []llm.ToolCall {
	var out []llm.ToolCall
	for _, ev := range evs {
		if ev.Kind == llm.EventToolCall {
			out = append(out, *ev.Call)
		}
	}
	return out
}

func userPrompt(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: text}}}
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// viaSession round-trips a message through JSON, as the session store does.
func viaSession(t *testing.T, m llm.Message) llm.Message {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var out llm.Message
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestTextStreamAndRequestShape(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	m := f.model(t, "gemini-3-pro-preview")
	assert.Equal(t, "gemini:gemini-3-pro-preview", m.Name())

	req := llm.Request{
		System:    "You are decode.",
		MaxTokens: 2048,
		Messages:  []llm.Message{{Role: llm.RoleUser, Text: "say hello"}},
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`)},
			{Name: "todo_list", Description: "List todos."},
		},
	}
	evs := events(m, req)

	assert.Equal(t, []string{"Hello", ", world", "!"}, texts(evs, llm.EventText))
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind, "final event: %+v", done)
	resp := done.Response
	assert.Equal(t, "Hello, world!", resp.Message.Text)
	assert.Equal(t, llm.StopEnd, resp.Stop)
	assert.Equal(t, "gemini-3-pro-preview", resp.Model)
	assert.Equal(t, llm.Usage{Input: 1020, Output: 44, CacheRead: 800}, resp.Usage, "the last usageMetadata counts")
	require.NotNil(t, resp.Message.Native)
	assert.Equal(t, "gemini", resp.Message.Native.Provider)
	assert.JSONEq(t, `[{"text":"Hello, world!"},{"thoughtSignature":"CiQBjz1rX0VtZXh0U2lnbmF0dXJlRm9yVGVzdGluZw=="}]`,
		string(resp.Message.Native.Data), "unsigned text merged, signed part kept")

	reqs := f.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "POST", r.method)
	assert.Equal(t, "/v1beta/models/gemini-3-pro-preview:streamGenerateContent", r.path)
	assert.Equal(t, "alt=sse", r.query)
	assert.Equal(t, "AIza-test-key", r.header.Get("X-Goog-Api-Key"))
	assert.JSONEq(t, `{"role":"user","parts":[{"text":"You are decode."}]}`, jsonOf(t, r.body["systemInstruction"]))
	assert.JSONEq(t, `[{"functionDeclarations":[
		{"name":"read","description":"Read a file.","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}},
		{"name":"todo_list","description":"List todos."}
	]}]`, jsonOf(t, r.body["tools"]))
	assert.JSONEq(t, `{"maxOutputTokens":2048}`, jsonOf(t, r.body["generationConfig"]))
	assert.JSONEq(t, `[{"role":"user","parts":[{"text":"say hello"}]}]`, jsonOf(t, r.body["contents"]))
	assert.NotContains(t, r.body, "automaticContinuation")
}

func TestEmptyTextSignatureRoundTrip(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"}, reply{file: "text.sse"})
	m := f.model(t, "gemini-3-pro-preview")
	first := userPrompt("say hello")
	done := last(t, events(m, first))
	require.Equal(t, llm.EventDone, done.Kind)

	second := llm.Request{Messages: []llm.Message{
		first.Messages[0], viaSession(t, done.Response.Message), {Role: llm.RoleUser, Text: "again"},
	}}
	require.Equal(t, llm.EventDone, last(t, events(m, second)).Kind)
	assert.JSONEq(t, `[
		{"role":"user","parts":[{"text":"say hello"}]},
		{"role":"model","parts":[{"text":"Hello, world!"},{"text":"","thoughtSignature":"CiQBjz1rX0VtZXh0U2lnbmF0dXJlRm9yVGVzdGluZw=="}]},
		{"role":"user","parts":[{"text":"again"}]}
	]`, jsonOf(t, f.requests()[1].body["contents"]))
}

func TestFunctionCallWithoutIDRoundTrip(t *testing.T) {
	f := newFakeAPI(t, reply{file: "function_call.sse"}, reply{file: "text.sse"})
	m := f.model(t, "gemini-2.5-flash")
	first := userPrompt("read main.go")
	evs := events(m, first)

	assert.Equal(t, []string{"**Finding the file**\n\nI will read main.go."}, texts(evs, llm.EventThinking))
	assert.Empty(t, texts(evs, llm.EventText))
	got := calls(evs)
	require.Len(t, got, 1)
	assert.Equal(t, "call_zwCzaYtest_1", got[0].ID, "a local id when Gemini gives none")
	assert.Equal(t, "read", got[0].Name)
	assert.JSONEq(t, `{"path":"main.go","offset":10}`, string(got[0].Args))
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopToolUse, done.Response.Stop, "STOP with calls")
	assert.Equal(t, llm.Usage{Input: 54, Output: 76}, done.Response.Usage, "thoughts count as output")

	second := llm.Request{Messages: []llm.Message{
		first.Messages[0],
		viaSession(t, done.Response.Message),
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: got[0].ID, Name: "read", Content: "package main"}}},
	}}
	require.Equal(t, llm.EventDone, last(t, events(m, second)).Kind)
	assert.JSONEq(t, `[
		{"role":"user","parts":[{"text":"read main.go"}]},
		{"role":"model","parts":[
			{"text":"**Finding the file**\n\nI will read main.go.","thought":true},
			{"functionCall":{"name":"read","args":{"path":"main.go","offset":10}},"thoughtSignature":"CiwBjz1rXzJmdW5jdGlvbkNhbGxTaWduYXR1cmU+Zm9yL3Rlc3Rpbmc="}
		]},
		{"role":"user","parts":[{"functionResponse":{"name":"read","response":{"output":"package main"}}}]}
	]`, jsonOf(t, f.requests()[1].body["contents"]), "the local id is not sent back")
}

func TestParallelCallsAcrossChunksWithIDs(t *testing.T) {
	f := newFakeAPI(t, reply{file: "parallel_calls.sse"}, reply{file: "text.sse"})
	m := f.model(t, "gemini-3-pro-preview")
	first := userPrompt("look around")
	evs := events(m, first)

	got := calls(evs)
	require.Len(t, got, 2)
	assert.Equal(t, llm.ToolCall{ID: "k3x9q2lm", Name: "glob", Args: json.RawMessage(`{"pattern":"**/*.go"}`)}, got[0])
	assert.Equal(t, llm.ToolCall{ID: "p7w4z1nc", Name: "todo_list", Args: json.RawMessage(`{}`)}, got[1])
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopToolUse, done.Response.Stop)
	assert.Equal(t, got, done.Response.Message.Calls)

	second := llm.Request{Messages: []llm.Message{
		first.Messages[0],
		viaSession(t, done.Response.Message),
		{Role: llm.RoleTool, Results: []llm.ToolResult{
			{CallID: "k3x9q2lm", Name: "glob", Content: "main.go"},
			{CallID: "p7w4z1nc", Name: "todo_list", Content: "unknown tool", IsError: true},
		}},
	}}
	require.Equal(t, llm.EventDone, last(t, events(m, second)).Kind)
	contents := f.requests()[1].body["contents"].([]any)
	require.Len(t, contents, 3, "all responses in one user content")
	assert.JSONEq(t, `{"role":"model","parts":[
		{"functionCall":{"name":"glob","args":{"pattern":"**/*.go"},"id":"k3x9q2lm"},"thoughtSignature":"EqcECqQEAb4+9vvPYXJhbGxlbENhbGxTaWc="},
		{"functionCall":{"name":"todo_list","id":"p7w4z1nc"}}
	]}`, jsonOf(t, contents[1]))
	assert.JSONEq(t, `{"role":"user","parts":[
		{"functionResponse":{"id":"k3x9q2lm","name":"glob","response":{"output":"main.go"}}},
		{"functionResponse":{"id":"p7w4z1nc","name":"todo_list","response":{"error":"unknown tool"}}}
	]}`, jsonOf(t, contents[2]))
}

func TestNeutralHistoryFromOtherProvider(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "fix it"},
		{Role: llm.RoleAssistant, Text: "Looking.", Native: &llm.Native{Provider: "anthropic", Data: json.RawMessage(`[{"type":"text","text":"x"}]`)},
			Calls: []llm.ToolCall{
				{ID: "toolu_1", Name: "read", Args: json.RawMessage(`{"path":"a.go","limit":12345678901234567}`)},
				{ID: "toolu_2", Name: "edit", Args: json.RawMessage(`{"path":`)},
			}},
		{Role: llm.RoleTool, Results: []llm.ToolResult{
			{CallID: "toolu_1", Content: "package a"},
			{CallID: "toolu_2", Name: "edit", Content: "invalid arguments", IsError: true},
		}},
	}}
	require.Equal(t, llm.EventDone, last(t, events(f.model(t, "gemini-2.5-flash"), req)).Kind)
	assert.JSONEq(t, `[
		{"role":"user","parts":[{"text":"fix it"}]},
		{"role":"model","parts":[
			{"text":"Looking."},
			{"functionCall":{"name":"read","args":{"path":"a.go","limit":12345678901234567}}},
			{"functionCall":{"name":"edit"}}
		]},
		{"role":"user","parts":[
			{"functionResponse":{"name":"read","response":{"output":"package a"}}},
			{"functionResponse":{"name":"edit","response":{"error":"invalid arguments"}}}
		]}
	]`, jsonOf(t, f.requests()[0].body["contents"]))
}

func TestForeignHistoryOnGemini3CarriesTheDocumentedSignature(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "fix it"},
		{Role: llm.RoleAssistant, Calls: []llm.ToolCall{
			{ID: "call_1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
			{ID: "call_2", Name: "read", Args: json.RawMessage(`{"path":"b.go"}`)},
		}},
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "call_1", Content: "a"}, {CallID: "call_2", Content: "b"}}},
	}}
	sig := base64.StdEncoding.EncodeToString([]byte("skip_thought_signature_validator"))
	f := newFakeAPI(t, reply{file: "text.sse"})
	require.Equal(t, llm.EventDone, last(t, events(f.model(t, "gemini-3-pro-preview"), req)).Kind)
	contents := f.requests()[0].body["contents"].([]any)
	assert.JSONEq(t, `{"role":"model","parts":[
		{"functionCall":{"name":"read","args":{"path":"a.go"}},"thoughtSignature":"`+sig+`"},
		{"functionCall":{"name":"read","args":{"path":"b.go"}}}
	]}`, jsonOf(t, contents[1]), "only the first call of a turn carries a signature, as Gemini's own do")

	f = newFakeAPI(t, reply{file: "text.sse"})
	require.Equal(t, llm.EventDone, last(t, events(f.model(t, "gemini-2.5-flash"), req)).Kind)
	assert.NotContains(t, jsonOf(t, f.requests()[0].body["contents"]), "thoughtSignature", "Gemini 2.5 does not validate signatures: none is invented")
}

func TestMaxTokens(t *testing.T) {
	f := newFakeAPI(t, reply{file: "max_tokens.sse"})
	done := last(t, events(f.model(t, "gemini-2.5-flash"), userPrompt("write a lot")))
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopMaxTokens, done.Response.Stop)
	assert.Equal(t, "A very long answer", done.Response.Message.Text)
	assert.Equal(t, llm.Usage{Input: 30, Output: 74}, done.Response.Usage)
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name       string
		reply      reply
		kind       llm.ErrorKind
		status     int
		retryAfter time.Duration
		msg        string
	}{
		{
			name:  "error in stream after 200",
			reply: reply{file: "error_event.sse"},
			kind:  llm.ErrOverloaded, status: 503, msg: "overloaded",
		},
		{
			name: "429 per-minute with RetryInfo",
			reply: reply{status: 429, body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. Please retry in 27.4s.","status":"RESOURCE_EXHAUSTED","details":[
				{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"10"}]},
				{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"27s"}]}}`},
			kind: llm.ErrRateLimit, status: 429, retryAfter: 27 * time.Second, msg: "exceeded",
		},
		{
			name: "429 with Retry-After",
			reply: reply{status: 429, header: map[string]string{"Retry-After": "7"},
				body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`},
			kind: llm.ErrRateLimit, status: 429, retryAfter: 7 * time.Second, msg: "exhausted",
		},
		{
			name: "429 daily quota",
			reply: reply{status: 429, body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
				{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]}]}}`},
			kind: llm.ErrQuota, status: 429, msg: "quota",
		},
		{
			name:  "429 spending cap",
			reply: reply{status: 429, body: `{"error":{"code":429,"message":"Your project has exceeded its spending cap.","status":"RESOURCE_EXHAUSTED"}}`},
			kind:  llm.ErrQuota, status: 429, msg: "spending cap",
		},
		{
			name:  "503 overloaded",
			reply: reply{status: 503, body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`},
			kind:  llm.ErrOverloaded, status: 503, msg: "overloaded",
		},
		{
			name:  "500",
			reply: reply{status: 500, body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`},
			kind:  llm.ErrServer, status: 500, msg: "internal error",
		},
		{
			name: "400 API_KEY_INVALID",
			reply: reply{status: 400, body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[
				{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`},
			kind: llm.ErrAuth, status: 400, msg: "API key not valid",
		},
		{
			name:  "403",
			reply: reply{status: 403, body: `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`},
			kind:  llm.ErrAuth, status: 403, msg: "unregistered",
		},
		{
			name:  "404 model",
			reply: reply{status: 404, body: `{"error":{"code":404,"message":"models/gemini-nope is not found for API version v1beta","status":"NOT_FOUND"}}`},
			kind:  llm.ErrNotFound, status: 404, msg: "not found",
		},
		{
			name:  "400 input token count exceeds the maximum",
			reply: reply{status: 400, body: `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`},
			kind:  llm.ErrContextTooLong, status: 400, msg: "exceeds the maximum number of tokens",
		},
		{
			name:  "400 bad request",
			reply: reply{status: 400, body: `{"error":{"code":400,"message":"Please ensure that function response turn comes immediately after a function call turn.","status":"INVALID_ARGUMENT"}}`},
			kind:  llm.ErrBadRequest, status: 400, msg: "function response turn",
		},
		{
			name:  "stream ends without finishReason",
			reply: reply{file: "truncated.sse"},
			kind:  llm.ErrTruncated, msg: "finish reason",
		},
		{
			name:  "connection dropped mid-stream",
			reply: reply{file: "truncated.sse", cut: true},
			kind:  llm.ErrNetwork, msg: "stream cut",
		},
		{
			name:  "malformed chunk",
			reply: reply{file: "bad_json.sse"},
			kind:  llm.ErrMalformed,
		},
		{
			name:  "malformed function call is retried",
			reply: reply{file: "malformed_call.sse"},
			kind:  llm.ErrServer, msg: "MALFORMED_FUNCTION_CALL",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, tc.reply)
			evs := events(f.model(t, "gemini-2.5-flash"), userPrompt("hi"))
			end := last(t, evs)
			require.Equal(t, llm.EventError, end.Kind, "final event: %+v", end)
			e := llm.AsError(end.Err)
			require.NotNil(t, e, "an *llm.Error: %v", end.Err)
			assert.Equal(t, tc.kind, e.Kind, "kind of %v", e)
			assert.Equal(t, "gemini", e.Provider)
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.retryAfter, e.RetryAfter)
			assert.Contains(t, e.Error(), tc.msg)
			assert.Len(t, f.requests(), 1, "the adapter must not retry")
		})
	}
}

func TestNoGlobalLogOnCutStream(t *testing.T) {
	var buf bytes.Buffer
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(prev); log.SetFlags(flags) })

	f := newFakeAPI(t, reply{file: "truncated.sse", cut: true})
	end := last(t, events(f.model(t, "gemini-2.5-flash"), userPrompt("hi")))
	require.Equal(t, llm.EventError, end.Kind)
	assert.Empty(t, buf.String(), "genai wrote to the global log")
}

func TestConfigIgnoresEnvironment(t *testing.T) {
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("GEMINI_API_KEY", "AIza-from-env")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	f := newFakeAPI(t, reply{file: "text.sse"})
	m, err := New(context.Background(), Config{APIKey: "AIza-explicit", BaseURL: f.srv.URL, Model: "gemini-2.5-flash", MaxTokens: 300})
	require.NoError(t, err)

	require.Equal(t, llm.EventDone, last(t, events(m, userPrompt("hi"))).Kind)
	r := f.requests()[0]
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", r.path)
	assert.Equal(t, "AIza-explicit", r.header.Get("X-Goog-Api-Key"))
	assert.JSONEq(t, `{"maxOutputTokens":300}`, jsonOf(t, r.body["generationConfig"]))
}

func TestNewRequiresModelAndKey(t *testing.T) {
	_, err := New(context.Background(), Config{APIKey: "k"})
	assert.Equal(t, llm.ErrConfig, llm.AsError(err).Kind)
	_, err = New(context.Background(), Config{Model: "gemini-2.5-flash"})
	assert.Equal(t, llm.ErrConfig, llm.AsError(err).Kind)
}

func TestConsumerStopsEarly(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	n := 0
	for ev := range f.model(t, "gemini-2.5-flash").Stream(context.Background(), userPrompt("hi")) {
		n++
		assert.Equal(t, llm.EventText, ev.Kind)
		break
	}
	assert.Equal(t, 1, n)
}

func TestCancelledContext(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var end llm.Event
	for ev := range f.model(t, "gemini-2.5-flash").Stream(ctx, userPrompt("hi")) {
		end = ev
	}
	require.Equal(t, llm.EventError, end.Kind)
	assert.True(t, errors.Is(end.Err, context.Canceled), "got %v", end.Err)
	assert.Nil(t, llm.AsError(end.Err), "cancellation is not a provider fault to retry")
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	m, err := New(context.Background(), Config{APIKey: "k", BaseURL: url, Model: "gemini-2.5-flash"})
	require.NoError(t, err)
	end := last(t, events(m, userPrompt("hi")))
	require.Equal(t, llm.EventError, end.Kind)
	e := llm.AsError(end.Err)
	require.NotNil(t, e, "an *llm.Error: %v", end.Err)
	assert.Equal(t, llm.ErrNetwork, e.Kind)
	assert.True(t, e.Retryable())
}

// TestUserImages: images a user attached follow the text as inlineData parts.
func TestUserImages(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "what is in these?", Images: []llm.Image{
		{MIME: "image/png", Data: []byte("PNG")}, {MIME: "image/gif", Data: []byte("GIF")}}}}}
	require.Equal(t, llm.EventDone, last(t, events(f.model(t, "gemini-2.5-flash"), req)).Kind)
	assert.JSONEq(t, `[{"role":"user","parts":[
		{"text":"what is in these?"},
		{"inlineData":{"mimeType":"image/png","data":"UE5H"}},
		{"inlineData":{"mimeType":"image/gif","data":"R0lG"}}]}]`, jsonOf(t, f.requests()[0].body["contents"]))
}
