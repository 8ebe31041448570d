// Package llm holds decode's provider-neutral conversation types and the Model
// interface that every provider adapter implements. It imports nothing from
// the project: adapters import it, never the reverse.
package llm

import (
	"context"
	"encoding/json"
	"iter"
)

// Role says who wrote a message.
type Role string

// The roles a Message can have. Tool results travel in a RoleTool message
// that answers the tool calls of the assistant message before it.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation in provider-neutral form.
type Message struct {
	Role Role `json:"role"`
	// Text is the user's prompt or the assistant's answer text.
	Text string `json:"text,omitempty"`
	// Images go with a user message after its Text (files attached with
	// -f), in each provider's own form.
	Images []Image `json:"images,omitempty"`
	// Calls are the tool calls an assistant message makes, in order.
	Calls []ToolCall `json:"calls,omitempty"`
	// Results answer the calls of the previous assistant message, in order.
	Results []ToolResult `json:"results,omitempty"`
	// Native is the adapter's own encoding of an assistant message (Gemini
	// parts with thought signatures, Anthropic thinking blocks), replayed
	// verbatim when the same provider sees the conversation again. Other
	// providers ignore it and use the neutral fields above.
	Native *Native `json:"native,omitempty"`
}

// Native is provider-specific state attached to an assistant message.
type Native struct {
	Provider string          `json:"provider"`
	Data     json.RawMessage `json:"data"`
}

// ToolCall is one call of a tool requested by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is the JSON object of arguments exactly as the model sent it; it
	// may be invalid JSON, which the tool reports back as an error.
	Args json.RawMessage `json:"args"`
}

// ToolResult is the outcome of one tool call, as the model will see it.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// Images go with the result to providers that take images in tool
	// results (Anthropic); the others see only Content, which describes them.
	Images []Image `json:"images,omitempty"`
}

// Image is an image a tool returned or a user attached: its MIME type
// (image/png, image/jpeg, image/gif or image/webp) and its bytes.
type Image struct {
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage `json:"schema"`
}

// Request is everything one model call needs.
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
	// MaxTokens caps the answer; 0 leaves the provider's default.
	MaxTokens int
	// ResponseSchema, when set, is a JSON Schema the final answer must be a
	// JSON document valid against. Adapters use the provider's native
	// structured output (OpenAI response_format json_schema, Gemini response
	// schema, Anthropic a forced tool) where it has one.
	ResponseSchema json.RawMessage
	// Purpose says what a request is for when it is not a step of the
	// conversation (PurposeSummary); "" for a step. Adapters send it
	// nowhere; a scripted model answers by it.
	Purpose string
	// Folded is the number of the conversation's model responses that
	// compaction folded out of Messages, so that a model that counts turns
	// (the scripted one) keeps its place. Adapters send it nowhere.
	Folded int
}

// PurposeSummary marks a request that asks for a summary of the earlier
// part of a conversation, to compact it.
const PurposeSummary = "summary"

// Usage counts the tokens of one model response. Input counts every prompt
// token, cached ones included; CacheRead and CacheWrite say how many of
// them were read from or written to the provider's prompt cache (adapters
// whose API reports them separately add them into Input).
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Input:      u.Input + o.Input,
		Output:     u.Output + o.Output,
		CacheRead:  u.CacheRead + o.CacheRead,
		CacheWrite: u.CacheWrite + o.CacheWrite,
	}
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, normalised across providers.
const (
	StopEnd       StopReason = "end"        // a complete answer
	StopToolUse   StopReason = "tool_use"   // the answer asks for tool calls
	StopMaxTokens StopReason = "max_tokens" // cut at the token limit
	StopError     StopReason = "error"      // the stream failed; see Event.Err
)

// EventKind names what an Event carries.
type EventKind int

// The kinds of streamed events.
const (
	// EventText carries a delta of answer text in Text.
	EventText EventKind = iota + 1
	// EventThinking carries a delta of reasoning text in Text (not part of the answer).
	EventThinking
	// EventToolCall carries one complete tool call in Call.
	EventToolCall
	// EventDone ends a successful stream; Response holds the whole message.
	EventDone
	// EventError ends a failed stream; Err says why (usually an *Error).
	EventError
	// EventRetry says the stream failed with a retryable Err and is being
	// sent again whole after a delay; text already yielded is void and will
	// be streamed again. Only the retry wrapper yields it.
	EventRetry
)

// Event is one item of a model's streamed response. A stream yields any
// number of text, thinking and tool-call events and ends with exactly one
// EventDone or EventError.
type Event struct {
	Kind     EventKind
	Text     string
	Call     *ToolCall
	Response *Response
	Err      error
	// Attempt is the attempt about to start (EventRetry only), counting from 2.
	Attempt int
}

// Response is the complete result of one model call.
type Response struct {
	Message Message
	Usage   Usage
	Stop    StopReason
	// Model is the model that answered, as the provider reported it.
	Model string
}

// Collect drains a stream and returns its response, or the error that ended it.
func Collect(events iter.Seq[Event]) (Response, error) {
	for ev := range events {
		switch ev.Kind {
		case EventDone:
			return *ev.Response, nil
		case EventError:
			return Response{}, ev.Err
		}
	}
	return Response{}, &Error{Kind: ErrTruncated, Msg: "stream ended without a response"}
}

// Model streams one request. Implementations never panic out of Stream and
// never yield after the final EventDone or EventError; a transport failure or
// a malformed or truncated stream becomes an EventError carrying an *Error.
type Model interface {
	// Name is "provider:model", e.g. "openai:gpt-4.1-mini".
	Name() string
	Stream(ctx context.Context, req Request) iter.Seq[Event]
}
