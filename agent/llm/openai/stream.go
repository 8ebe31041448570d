package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"decode/agent/llm"

	goopenai "github.com/sashabaranov/go-openai"
)

// accumulator builds the response of one stream from its chunks.
type accumulator struct {
	text    strings.Builder
	calls   []*partialCall
	byIndex map[int]int // tool-call delta index → position in calls
	finish  goopenai.FinishReason
	usage   llm.Usage
	model   string
}

// partialCall is a tool call whose arguments are still arriving.
type partialCall struct {
	id   string
	name string
	args strings.Builder
}

func newAccumulator() *accumulator {
	return &accumulator{byIndex: map[int]int{}}
}

// add takes one chunk and returns its reasoning and answer text deltas.
// Chunks without choices (the usage chunk) are normal.
func (a *accumulator) add(chunk goopenai.ChatCompletionStreamResponse) (thinking, text string) {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if u := chunk.Usage; u != nil {
		a.usage = llm.Usage{Input: u.PromptTokens, Output: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			a.usage.CacheRead = u.PromptTokensDetails.CachedTokens
		}
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // only one choice is requested
		}
		thinking += ch.Delta.ReasoningContent
		text += ch.Delta.Content + ch.Delta.Refusal
		for _, tc := range ch.Delta.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
			a.finish = ch.FinishReason
		}
	}
	a.text.WriteString(text)
	return thinking, text
}

// addCall merges one tool-call delta. Deltas are keyed by Index: the first
// delta of an index carries the id and name, the following ones pieces of
// the arguments. Servers that send no index (whole calls, one per delta) are
// keyed by id.
func (a *accumulator) addCall(tc goopenai.ToolCall) {
	var pos int
	switch {
	case tc.Index != nil:
		p, ok := a.byIndex[*tc.Index]
		if !ok {
			p = a.newCall()
			a.byIndex[*tc.Index] = p
		}
		pos = p
	case len(a.calls) == 0 || (tc.ID != "" && tc.ID != a.calls[len(a.calls)-1].id):
		pos = a.newCall()
	default:
		pos = len(a.calls) - 1
	}
	c := a.calls[pos]
	if c.id == "" {
		c.id = tc.ID
	}
	if c.name == "" {
		c.name = tc.Function.Name
	}
	c.args.WriteString(tc.Function.Arguments)
}

func (a *accumulator) newCall() int {
	a.calls = append(a.calls, &partialCall{})
	return len(a.calls) - 1
}

// response is the complete response once the stream has finished.
func (a *accumulator) response() llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Text: a.text.String()}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			// Some compatible servers send no id; the loop needs one to
			// pair the result with its call.
			id = fmt.Sprintf("call_%d", i)
		}
		args := c.args.String()
		if args == "" {
			args = "{}" // a call without arguments
		}
		msg.Calls = append(msg.Calls, llm.ToolCall{ID: id, Name: c.name, Args: json.RawMessage(args)})
	}
	return llm.Response{Message: msg, Usage: a.usage, Stop: a.stopReason(), Model: a.model}
}

// stopReason maps finish_reason. A "stop" with tool calls counts as tool
// use: some compatible servers report it so, and the calls must still run.
func (a *accumulator) stopReason() llm.StopReason {
	switch a.finish {
	case goopenai.FinishReasonToolCalls, goopenai.FinishReasonFunctionCall:
		return llm.StopToolUse
	case goopenai.FinishReasonLength:
		return llm.StopMaxTokens
	}
	if len(a.calls) > 0 {
		return llm.StopToolUse
	}
	return llm.StopEnd
}
