package openai_test

import (
	"encoding/json"
	"testing"

	"decode/agent/llm"
	"decode/agent/llm/openai"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireRequest is the chat completion request as it travels.
type wireRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeBody(t *testing.T, body []byte) wireRequest {
	t.Helper()
	var w wireRequest
	require.NoError(t, json.Unmarshal(body, &w), "request body is JSON: %s", body)
	return w
}

func content(t *testing.T, s *string) string {
	t.Helper()
	require.NotNil(t, s, "message has content")
	return *s
}

func TestRequestSent(t *testing.T) {
	const schema = `{"type":"object","properties":{"pattern":{"type":"string","description":"glob"}},"required":["pattern"]}`
	srv, reqs := server(t, sse(t, "text.sse"))
	req := llm.Request{
		System: "You are decode.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "list go files"},
			{Role: llm.RoleAssistant, Text: "Looking.", Calls: []llm.ToolCall{
				{ID: "call_1", Name: "glob", Args: json.RawMessage(`{"pattern":"*.go"}`)},
				{ID: "call_2", Name: "read", Args: json.RawMessage(`{"path": broken`)},
				{ID: "call_3", Name: "todo"},
			}},
			{Role: llm.RoleTool, Results: []llm.ToolResult{
				{CallID: "call_1", Name: "glob", Content: "main.go"},
				{CallID: "call_2", Name: "read", Content: "invalid arguments", IsError: true},
				{CallID: "call_3", Name: "todo", Content: ""},
			}},
			{Role: llm.RoleAssistant, Native: &llm.Native{Provider: "gemini", Data: json.RawMessage(`{}`)}},
			{Role: llm.RoleUser, Text: "thanks"},
		},
		Tools: []llm.ToolSpec{
			{Name: "glob", Description: "Find files by pattern.", Schema: json.RawMessage(schema)},
			{Name: "todo", Description: "List todos."},
		},
	}
	collect(newModel(t, srv, ""), req)
	got := <-reqs

	assert.Equal(t, "POST", got.method)
	assert.Equal(t, "/v1/chat/completions", got.path, "path under the base URL")
	assert.Equal(t, "Bearer sk-test-123", got.header.Get("Authorization"))
	body := decodeBody(t, got.body)
	assert.Equal(t, "gpt-4.1-mini", body.Model)
	assert.True(t, body.Stream, "stream:true")
	require.NotNil(t, body.StreamOptions, "stream_options sent")
	assert.True(t, body.StreamOptions.IncludeUsage, "stream_options.include_usage")

	require.Len(t, body.Tools, 2)
	assert.Equal(t, "function", body.Tools[0].Type)
	assert.Equal(t, "glob", body.Tools[0].Function.Name)
	assert.Equal(t, "Find files by pattern.", body.Tools[0].Function.Description)
	assert.JSONEq(t, schema, string(body.Tools[0].Function.Parameters), "the raw schema")
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(body.Tools[1].Function.Parameters),
		"an empty object schema, never null")

	msgs := body.Messages
	require.Len(t, msgs, 7, "system, user, assistant, 3 tool results, user (empty assistant dropped)")
	assert.Equal(t, "system", msgs[0].Role)
	assert.Equal(t, "You are decode.", content(t, msgs[0].Content))
	assert.Equal(t, "user", msgs[1].Role)
	assert.Equal(t, "list go files", content(t, msgs[1].Content))

	assert.Equal(t, "assistant", msgs[2].Role)
	assert.Equal(t, "Looking.", content(t, msgs[2].Content))
	require.Len(t, msgs[2].ToolCalls, 3)
	for i, want := range []struct{ id, name, args string }{
		{"call_1", "glob", `{"pattern":"*.go"}`},
		{"call_2", "read", `{"path": broken`},
		{"call_3", "todo", `{}`},
	} {
		tc := msgs[2].ToolCalls[i]
		assert.Equal(t, want.id, tc.ID)
		assert.Equal(t, "function", tc.Type)
		assert.Equal(t, want.name, tc.Function.Name)
		assert.Equal(t, want.args, tc.Function.Arguments, "arguments as a string, verbatim")
	}

	for i, want := range []struct{ id, content string }{
		{"call_1", "main.go"}, {"call_2", "invalid arguments"}, {"call_3", "(no output)"},
	} {
		m := msgs[3+i]
		assert.Equal(t, "tool", m.Role)
		assert.Equal(t, want.id, m.ToolCallID, "tool_call_id")
		assert.Equal(t, want.content, content(t, m.Content))
	}
	assert.Equal(t, "user", msgs[6].Role)
	assert.Equal(t, "thanks", content(t, msgs[6].Content))
	assert.Zero(t, body.MaxTokens, "no cap unless asked")
	assert.Zero(t, body.MaxCompletionTokens, "no cap unless asked")
}

func TestRequestBaseURLWithPrefix(t *testing.T) {
	srv, reqs := server(t, sse(t, "openrouter_comment.sse"))
	m, err := openai.New(openai.Config{
		BaseURL: srv.URL + "/api/v1/", Model: "meta-llama/llama-3.2-3b-instruct", Provider: "openrouter",
		HTTPClient: srv.Client(),
	})
	require.NoError(t, err)
	collect(m, hello)
	got := <-reqs

	assert.Equal(t, "/api/v1/chat/completions", got.path)
	assert.Empty(t, got.header.Get("Authorization"), "no key, no header")
}

func TestRequestMaxTokens(t *testing.T) {
	tests := []struct {
		provider, model         string
		config, request         int
		maxTokens, maxCompleted int
	}{
		{provider: "openai", model: "gpt-4.1-mini", request: 100, maxCompleted: 100},
		{provider: "openai", model: "gpt-4.1-mini", config: 50, maxCompleted: 50},
		{provider: "ollama", model: "qwen3", config: 50, request: 70, maxTokens: 70},
		{provider: "openrouter", model: "gpt-5-mini", request: 10, maxCompleted: 10},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			srv, reqs := server(t, sse(t, "text.sse"))
			m, err := openai.New(openai.Config{
				BaseURL: srv.URL + "/v1", Model: tt.model, Provider: tt.provider,
				MaxTokens: tt.config, HTTPClient: srv.Client(),
			})
			require.NoError(t, err)
			req := hello
			req.MaxTokens = tt.request
			done(t, collect(m, req))
			body := decodeBody(t, (<-reqs).body)

			assert.Equal(t, tt.maxTokens, body.MaxTokens, "max_tokens")
			assert.Equal(t, tt.maxCompleted, body.MaxCompletionTokens, "max_completion_tokens")
		})
	}
}

func TestNew(t *testing.T) {
	m, err := openai.New(openai.Config{Model: "gpt-4.1-mini"})
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-4.1-mini", m.Name(), "default provider")

	for name, c := range map[string]openai.Config{
		"no model":        {},
		"relative base":   {Model: "x", BaseURL: "localhost:11434/v1"},
		"other scheme":    {Model: "x", BaseURL: "ftp://example.com/v1"},
		"negative tokens": {Model: "x", MaxTokens: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openai.New(c)
			e := llm.AsError(err)
			require.NotNil(t, e, "an *llm.Error: %v", err)
			assert.Equal(t, llm.ErrConfig, e.Kind)
		})
	}
}
