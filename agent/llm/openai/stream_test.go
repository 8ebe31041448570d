package openai

import (
	"testing"

	"decode/agent/llm"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func chunk(finish goopenai.FinishReason, calls ...goopenai.ToolCall) goopenai.ChatCompletionStreamResponse {
	return goopenai.ChatCompletionStreamResponse{Choices: []goopenai.ChatCompletionStreamChoice{
		{Delta: goopenai.ChatCompletionStreamChoiceDelta{ToolCalls: calls}, FinishReason: finish},
	}}
}

func call(id, name, args string) goopenai.ToolCall {
	return goopenai.ToolCall{ID: id, Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: name, Arguments: args}}
}

// Some compatible servers (older Ollama) send whole calls without an index.
func TestAccumulatorCallsWithoutIndex(t *testing.T) {
	a := newAccumulator()
	a.add(chunk("", call("c1", "read", `{"path":`)))
	a.add(chunk("", call("", "", `"a"}`), call("c2", "read", `{"path":"b"}`)))
	a.add(chunk(goopenai.FinishReasonStop))
	resp := a.response()

	require.Len(t, resp.Message.Calls, 2)
	assert.Equal(t, llm.ToolCall{ID: "c1", Name: "read", Args: []byte(`{"path":"a"}`)}, resp.Message.Calls[0],
		"a delta without id or index continues the previous call")
	assert.Equal(t, llm.ToolCall{ID: "c2", Name: "read", Args: []byte(`{"path":"b"}`)}, resp.Message.Calls[1])
	assert.Equal(t, llm.StopToolUse, resp.Stop, "stop with calls still runs them")
}

func TestAccumulatorMissingIDAndArgs(t *testing.T) {
	a := newAccumulator()
	i0, i1 := 0, 1
	first := call("", "todo", "")
	first.Index = &i0
	second := call("", "glob", `{"pattern":"*"}`)
	second.Index = &i1
	a.add(chunk("", first, second))
	a.add(goopenai.ChatCompletionStreamResponse{}) // no choices at all
	a.add(chunk(goopenai.FinishReasonToolCalls))
	resp := a.response()

	require.Len(t, resp.Message.Calls, 2)
	assert.Equal(t, llm.ToolCall{ID: "call_0", Name: "todo", Args: []byte(`{}`)}, resp.Message.Calls[0],
		"an id is made up; no arguments mean an empty object")
	assert.Equal(t, "call_1", resp.Message.Calls[1].ID)
}

func TestAccumulatorIgnoresOtherChoices(t *testing.T) {
	a := newAccumulator()
	_, text := a.add(goopenai.ChatCompletionStreamResponse{Choices: []goopenai.ChatCompletionStreamChoice{
		{Index: 0, Delta: goopenai.ChatCompletionStreamChoiceDelta{Content: "a"}},
		{Index: 1, Delta: goopenai.ChatCompletionStreamChoiceDelta{Content: "b"}, FinishReason: "stop"},
	}})
	assert.Equal(t, "a", text)
	assert.Empty(t, a.finish, "finish of another choice")
}
