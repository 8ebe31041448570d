package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// TestToolResultImages: an image a tool returned goes into its tool_result
// as an image block after the text; a type Anthropic does not take stays out.
func TestToolResultImages(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "look"},
		{Role: llm.RoleAssistant, Calls: []llm.ToolCall{{ID: "call_1", Name: "mcp__s__shot", Args: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "call_1", Name: "mcp__s__shot", Content: "[image 1: image/png]",
			Images: []llm.Image{{MIME: "image/png", Data: []byte("PNG")}, {MIME: "image/tiff", Data: []byte("TIF")}}}}},
	}}
	done := last(t, events(f.model(t), req))
	require.Equal(t, llm.EventDone, done.Kind)
	var msgs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, f.requests()[0].body["messages"])), &msgs))
	assert.JSONEq(t, `[{"type":"tool_result","tool_use_id":"call_1","content":[
		{"type":"text","text":"[image 1: image/png]"},
		{"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}}],
		"cache_control":{"type":"ephemeral"}}]`, jsonOf(t, msgs[2]["content"]))
}

// TestUserImages: images a user attached go into the user message as base64
// image blocks after the text, the last one carrying the conversation's
// cache breakpoint.
func TestUserImages(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "what is in these?", Images: []llm.Image{
			{MIME: "image/png", Data: []byte("PNG")}, {MIME: "image/jpeg", Data: []byte("JPG")}}},
	}}
	done := last(t, events(f.model(t), req))
	require.Equal(t, llm.EventDone, done.Kind)
	var msgs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, f.requests()[0].body["messages"])), &msgs))
	require.Len(t, msgs, 1)
	assert.Equal(t, "user", msgs[0]["role"])
	assert.JSONEq(t, `[
		{"type":"text","text":"what is in these?"},
		{"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}},
		{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"SlBH"},"cache_control":{"type":"ephemeral"}}]`,
		jsonOf(t, msgs[0]["content"]))
}
