package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

const verdictSchema = `{"type":"object","properties":{"ok":{"type":"boolean"},"reason":{"type":"string"}},"required":["ok","reason"]}`

func TestResponseSchemaForcesRespondTool(t *testing.T) {
	f := newFakeAPI(t, reply{file: "respond.sse"}, reply{file: "text.sse"})
	m := f.model(t)
	req := userPrompt("review this")
	req.Tools = []llm.ToolSpec{{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}}
	req.ResponseSchema = json.RawMessage(verdictSchema)
	evs := events(m, req)

	assert.Empty(t, calls(evs), "the respond call is the answer, not a tool call")
	assert.Equal(t, []string{`{"ok": false, "reason": "a secret"}`}, texts(evs, llm.EventText), "the answer streams as text")
	done := last(t, evs)
	require.Equal(t, llm.EventDone, done.Kind, "final event: %+v", done)
	msg := done.Response.Message
	assert.JSONEq(t, `{"ok":false,"reason":"a secret"}`, msg.Text)
	assert.Empty(t, msg.Calls)
	assert.Nil(t, msg.Native, "no tool_use block to send back without a result")
	assert.Equal(t, llm.StopEnd, done.Response.Stop)

	body := f.requests()[0].body
	assert.JSONEq(t, `{"type":"any","disable_parallel_tool_use":true}`, jsonOf(t, body["tool_choice"]))
	tools, _ := body["tools"].([]any)
	require.Len(t, tools, 2, "read and respond")
	respond, _ := tools[1].(map[string]any)
	assert.Equal(t, "respond", respond["name"])
	assert.JSONEq(t, verdictSchema, jsonOf(t, respond["input_schema"]))

	// Sent back (a retry after invalid output), the answer is a text block.
	req.Messages = append(req.Messages, msg, llm.Message{Role: llm.RoleUser, Text: "not valid; again"})
	events(m, req)
	assert.JSONEq(t, `[
		{"role":"user","content":[{"type":"text","text":"review this"}]},
		{"role":"assistant","content":[{"type":"text","text":"{\"ok\": false, \"reason\": \"a secret\"}"}]},
		{"role":"user","content":[{"type":"text","text":"not valid; again","cache_control":{"type":"ephemeral"}}]}
	]`, jsonOf(t, f.requests()[1].body["messages"]))
}

func TestResponseSchemaNotObjectIsWrapped(t *testing.T) {
	f := newFakeAPI(t, reply{file: "respond_wrapped.sse"})
	req := userPrompt("list them")
	req.ResponseSchema = json.RawMessage(`{"type":"array","items":{"type":"string"}}`)
	done := last(t, events(f.model(t), req))
	require.Equal(t, llm.EventDone, done.Kind, "final event: %+v", done)
	assert.JSONEq(t, `["a","b"]`, done.Response.Message.Text, "unwrapped")

	tools, _ := f.requests()[0].body["tools"].([]any)
	require.Len(t, tools, 1)
	respond, _ := tools[0].(map[string]any)
	assert.JSONEq(t, `{"type":"object","properties":{"answer":{"type":"array","items":{"type":"string"}}},"required":["answer"]}`,
		jsonOf(t, respond["input_schema"]))
}

func TestNoSchemaNoRespondTool(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	events(f.model(t), userPrompt("hi"))
	body := f.requests()[0].body
	assert.NotContains(t, body, "tool_choice")
	assert.NotContains(t, body, "tools")
}
