package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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

// request is what the SDK sent.
type request struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// fakeAPI is a local server speaking the Messages API wire format.
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
	f.reqs = append(f.reqs, request{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
	if len(f.replies) == 0 {
		f.mu.Unlock()
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no reply left"}}`, 400)
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
		w.Header().Set("Content-Type", "application/json")
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

func (f *fakeAPI) model(t *testing.T) *Model {
	m, err := New(Config{APIKey: "sk-ant-test", BaseURL: f.srv.URL, Model: "claude-sonnet-4-5"})
	require.NoError(t, err)
	return m
}

// events drains a stream.
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

func TestTextStreamAndRequestShape(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	m := f.model(t)
	assert.Equal(t, "anthropic:claude-sonnet-4-5", m.Name())

	req := llm.Request{
		System:   "You are decode.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "say hello"}},
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`)},
			{Name: "todo_list", Description: "List todos.", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
	}
	evs := events(m, req)

	assert.Equal(t, []string{"Hello", ", world", "!"}, texts(evs, llm.EventText))
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind, "final event: %+v", done)
	resp := done.Response
	assert.Equal(t, "Hello, world!", resp.Message.Text)
	assert.Equal(t, llm.RoleAssistant, resp.Message.Role)
	assert.Equal(t, llm.StopEnd, resp.Stop)
	assert.Equal(t, "claude-sonnet-4-5-20250929", resp.Model)
	assert.Equal(t, llm.Usage{Input: 21 + 3400 + 1200, Output: 9, CacheRead: 3400, CacheWrite: 1200}, resp.Usage, "Input includes cached tokens")
	require.NotNil(t, resp.Message.Native)
	assert.Equal(t, "anthropic", resp.Message.Native.Provider)

	reqs := f.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "POST", r.method)
	assert.Equal(t, "/v1/messages", r.path)
	assert.Equal(t, "sk-ant-test", r.header.Get("X-Api-Key"), "x-api-key for compatible gateways")
	assert.Equal(t, "Bearer sk-ant-test", r.header.Get("Authorization"))
	assert.NotEmpty(t, r.header.Get("Anthropic-Version"))
	assert.Equal(t, "claude-sonnet-4-5", r.body["model"])
	assert.Equal(t, true, r.body["stream"])
	assert.EqualValues(t, 8192, r.body["max_tokens"], "default max_tokens")
	assert.JSONEq(t, `[{"type":"text","text":"You are decode.","cache_control":{"type":"ephemeral"}}]`, jsonOf(t, r.body["system"]))
	assert.JSONEq(t, `[
		{"name":"read","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}},
		{"name":"todo_list","description":"List todos.","input_schema":{"type":"object","properties":{}},"cache_control":{"type":"ephemeral"}}
	]`, jsonOf(t, r.body["tools"]))
	assert.JSONEq(t, `[{"role":"user","content":[{"type":"text","text":"say hello","cache_control":{"type":"ephemeral"}}]}]`, jsonOf(t, r.body["messages"]),
		"the end of the conversation is a cache breakpoint")
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestToolCallArgumentsAcrossDeltas(t *testing.T) {
	f := newFakeAPI(t, reply{file: "tool.sse"})
	evs := events(f.model(t), llm.Request{MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Text: "read main.go"}}})

	got := calls(evs)
	require.Len(t, got, 1)
	assert.Equal(t, "toolu_01ReadMain", got[0].ID)
	assert.Equal(t, "read", got[0].Name)
	assert.JSONEq(t, `{"path":"main.go","offset":10}`, string(got[0].Args))

	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopToolUse, done.Response.Stop)
	assert.Equal(t, "Let me read it.", done.Response.Message.Text)
	assert.Equal(t, got, done.Response.Message.Calls)
	assert.Equal(t, llm.Usage{Input: 480, Output: 61}, done.Response.Usage)
	assert.EqualValues(t, 100, f.requests()[0].body["max_tokens"], "request MaxTokens wins")

	// The call is yielded before the stream ends, right after its block.
	var kinds []llm.EventKind
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []llm.EventKind{llm.EventText, llm.EventToolCall, llm.EventDone}, kinds)
}

func TestTwoToolCallsAndNoArgumentTool(t *testing.T) {
	f := newFakeAPI(t, reply{file: "two_tools.sse"})
	evs := events(f.model(t), userPrompt("look around"))

	got := calls(evs)
	require.Len(t, got, 2)
	assert.Equal(t, "glob", got[0].Name)
	assert.JSONEq(t, `{"pattern":"**/*.go"}`, string(got[0].Args))
	assert.Equal(t, "todo_list", got[1].Name)
	assert.Equal(t, "toolu_01Todo", got[1].ID)
	assert.JSONEq(t, `{}`, string(got[1].Args), "a tool without arguments gets {}")
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopToolUse, done.Response.Stop)
	assert.Empty(t, done.Response.Message.Text)
}

func TestThinkingRoundTripAndToolResults(t *testing.T) {
	f := newFakeAPI(t, reply{file: "thinking.sse"}, reply{file: "text.sse"})
	m := f.model(t)
	first := userPrompt("what version?")
	evs := events(m, first)

	assert.Equal(t, []string{"The user wants the version.\n", "I should call version."}, texts(evs, llm.EventThinking))
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	msg := done.Response.Message
	require.Len(t, msg.Calls, 1)
	assert.JSONEq(t, `{}`, string(msg.Calls[0].Args))
	assert.Empty(t, msg.Text, "thinking is not answer text")

	// The message goes through a session (JSON) before the next request.
	stored, err := json.Marshal(msg)
	require.NoError(t, err)
	var replayed llm.Message
	require.NoError(t, json.Unmarshal(stored, &replayed))

	second := llm.Request{Messages: []llm.Message{
		first.Messages[0],
		replayed,
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "toolu_01Version", Name: "version", Content: "no such command", IsError: true}}},
	}}
	done2 := last(t, events(m, second))
	require.Equal(t, llm.EventDone, done2.Kind, "second turn: %+v", done2)

	reqs := f.requests()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"what version?"}]},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"The user wants the version.\nI should call version.","signature":"EpQDCkgIBxABGAIqQPsig/Test+Signature==AbC"},
			{"type":"tool_use","id":"toolu_01Version","name":"version","input":{},"caller":{"type":"direct"}}
		]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01Version","is_error":true,"content":[{"type":"text","text":"no such command"}],"cache_control":{"type":"ephemeral"}}]}
	]`, jsonOf(t, reqs[1].body["messages"]))
}

func TestNeutralHistoryFromOtherProvider(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "fix it"},
		{Role: llm.RoleAssistant, Text: "Looking.", Native: &llm.Native{Provider: "gemini", Data: json.RawMessage(`[{"text":"x"}]`)},
			Calls: []llm.ToolCall{
				{ID: "call_1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "call_2", Name: "edit", Args: json.RawMessage(`{"path":`)},
			}},
		{Role: llm.RoleTool, Results: []llm.ToolResult{
			{CallID: "call_1", Name: "read", Content: "package a"},
			{CallID: "call_2", Name: "edit", Content: "invalid arguments", IsError: true},
		}},
	}}
	done := last(t, events(f.model(t), req))
	require.Equal(t, llm.EventDone, done.Kind)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"fix it"}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Looking."},
			{"type":"tool_use","id":"call_1","name":"read","input":{"path":"a.go"}},
			{"type":"tool_use","id":"call_2","name":"edit","input":{}}
		]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"package a"}]},
			{"type":"tool_result","tool_use_id":"call_2","is_error":true,"content":[{"type":"text","text":"invalid arguments"}],"cache_control":{"type":"ephemeral"}}
		]}
	]`, jsonOf(t, f.requests()[0].body["messages"]))
}

func TestMalformedToolArgumentsAreReportedRaw(t *testing.T) {
	f := newFakeAPI(t, reply{file: "bad_args.sse"})
	evs := events(f.model(t), userPrompt("edit a.go"))

	got := calls(evs)
	require.Len(t, got, 1)
	assert.Equal(t, "edit", got[0].Name)
	assert.Equal(t, `{"path": "a.go", "old": "x", "new": `, string(got[0].Args), "raw arguments, for the tool to reject")
	assert.False(t, json.Valid(got[0].Args))
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind)
	assert.Equal(t, llm.StopMaxTokens, done.Response.Stop)
	assert.Equal(t, 4096, done.Response.Usage.Output)
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
			name:  "error event after 200",
			reply: reply{file: "error_event.sse"},
			kind:  llm.ErrOverloaded, msg: "Overloaded",
		},
		{
			name: "429 with Retry-After",
			reply: reply{status: 429, header: map[string]string{"Retry-After": "7"},
				body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"}`},
			kind: llm.ErrRateLimit, status: 429, retryAfter: 7 * time.Second, msg: "per-minute rate limit",
		},
		{
			name:  "529 overloaded",
			reply: reply{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			kind:  llm.ErrOverloaded, status: 529, msg: "Overloaded",
		},
		{
			name:  "500",
			reply: reply{status: 500, body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
			kind:  llm.ErrServer, status: 500, msg: "Internal server error",
		},
		{
			name:  "401",
			reply: reply{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
			kind:  llm.ErrAuth, status: 401, msg: "invalid x-api-key",
		},
		{
			name:  "400 credit balance",
			reply: reply{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`},
			kind:  llm.ErrQuota, status: 400, msg: "credit balance",
		},
		{
			name:  "400 prompt is too long",
			reply: reply{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CTooLong"}`},
			kind:  llm.ErrContextTooLong, status: 400, msg: "prompt is too long",
		},
		{
			name:  "413 request too large",
			reply: reply{status: 413, body: `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`},
			kind:  llm.ErrContextTooLong, status: 413, msg: "maximum allowed number of bytes",
		},
		{
			name:  "400 bad request",
			reply: reply{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`},
			kind:  llm.ErrBadRequest, status: 400, msg: "at least one message",
		},
		{
			name:  "404 model",
			reply: reply{status: 404, body: `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`},
			kind:  llm.ErrNotFound, status: 404, msg: "claude-nope",
		},
		{
			name:  "stream ends before message_stop",
			reply: reply{file: "truncated.sse"},
			kind:  llm.ErrTruncated, msg: "message_stop",
		},
		{
			name:  "connection dropped mid-stream",
			reply: reply{file: "truncated.sse", cut: true},
			kind:  llm.ErrNetwork,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, tc.reply)
			evs := events(f.model(t), userPrompt("hi"))
			end := last(t, evs)
			require.Equal(t, llm.EventError, end.Kind, "final event: %+v", end)
			e := llm.AsError(end.Err)
			require.NotNil(t, e, "an *llm.Error: %v", end.Err)
			assert.Equal(t, tc.kind, e.Kind, "kind of %v", e)
			assert.Equal(t, "anthropic", e.Provider)
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.retryAfter, e.RetryAfter)
			assert.Contains(t, e.Error(), tc.msg)
			assert.Len(t, f.requests(), 1, "the adapter must not retry")
			for _, ev := range evs[:len(evs)-1] {
				assert.NotEqual(t, llm.EventDone, ev.Kind)
			}
		})
	}
}

func TestConfigIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFakeAPI(t, reply{file: "text.sse"})
	m, err := New(Config{APIKey: "sk-ant-explicit", BaseURL: f.srv.URL + "/v1/", Model: "claude-haiku-4-5", MaxTokens: 512})
	require.NoError(t, err)

	done := last(t, events(m, userPrompt("hi")))
	require.Equal(t, llm.EventDone, done.Kind, "%+v", done)
	r := f.requests()[0]
	assert.Equal(t, "/v1/messages", r.path, "a trailing /v1 in the base URL is not doubled")
	assert.Equal(t, "sk-ant-explicit", r.header.Get("X-Api-Key"))
	assert.Equal(t, "Bearer sk-ant-explicit", r.header.Get("Authorization"))
	assert.Empty(t, r.header.Get("X-Leak"))
	assert.EqualValues(t, 512, r.body["max_tokens"])
}

func TestNewRequiresModelAndKey(t *testing.T) {
	_, err := New(Config{APIKey: "k"})
	assert.Equal(t, llm.ErrConfig, llm.AsError(err).Kind)
	_, err = New(Config{Model: "claude-haiku-4-5"})
	assert.Equal(t, llm.ErrConfig, llm.AsError(err).Kind)
	_, err = New(Config{Model: "claude-haiku-4-5", BaseURL: "http://127.0.0.1:9"})
	assert.NoError(t, err, "a local gateway may need no key")
}

func TestConsumerStopsEarly(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	n := 0
	for ev := range f.model(t).Stream(context.Background(), userPrompt("hi")) {
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
	for ev := range f.model(t).Stream(ctx, userPrompt("hi")) {
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
	m, err := New(Config{APIKey: "k", BaseURL: url, Model: "claude-haiku-4-5"})
	require.NoError(t, err)
	end := last(t, events(m, userPrompt("hi")))
	require.Equal(t, llm.EventError, end.Kind)
	e := llm.AsError(end.Err)
	require.NotNil(t, e, "an *llm.Error: %v", end.Err)
	assert.Equal(t, llm.ErrNetwork, e.Kind)
	assert.True(t, e.Retryable())
}
