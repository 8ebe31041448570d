// Package anthropic adapts the Anthropic Messages API (through the official
// Go SDK) to decode's provider-neutral llm.Model. It streams text, thinking
// and tool calls, keeps thinking blocks with their signatures for the next
// request, and classifies failures into *llm.Error kinds. It never retries:
// the retry policy is one wrapper in package llm.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"decode/agent/llm"
)

// provider names this adapter in model names, errors and Native data.
const provider = "anthropic"

// defaultMaxTokens is sent when neither the request nor the config sets a
// cap: the Messages API requires max_tokens.
const defaultMaxTokens = 8192

// Config says how to reach the API. Nothing is read from the environment
// here: the caller resolves keys and base URLs.
type Config struct {
	APIKey string
	// BaseURL is the endpoint without /v1 (ANTHROPIC_BASE_URL's convention);
	// empty means the public API.
	BaseURL string
	Model   string
	// HTTPClient is used for every request; nil means a plain http.Client.
	HTTPClient *http.Client
	// MaxTokens caps answers when the request does not; 0 means 8192.
	MaxTokens int
}

// Model streams responses of one Anthropic model.
type Model struct {
	client    sdk.Client
	model     string
	maxTokens int
}

// New builds a Model. It fails with an llm.ErrConfig error when the model
// name is missing, or when there is neither an API key nor a custom
// endpoint (a local gateway may need no key).
func New(c Config) (*Model, error) {
	if c.Model == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: provider, Msg: "no model name"}
	}
	if c.APIKey == "" && c.BaseURL == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: provider, Msg: "no API key: set ANTHROPIC_API_KEY"}
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// WithoutEnvironmentDefaults keeps the SDK from reading ANTHROPIC_* and
	// profile files itself; retries are off because llm's wrapper owns them.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if c.APIKey != "" {
		// v2 sends the key as a Bearer token; Anthropic-compatible gateways
		// often accept only X-Api-Key, so send both.
		opts = append(opts, option.WithAPIKey(c.APIKey), option.WithHeader("X-Api-Key", c.APIKey))
	}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(trimV1(c.BaseURL)))
	}
	maxTokens := c.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	return &Model{client: sdk.NewClient(opts...), model: c.Model, maxTokens: maxTokens}, nil
}

// trimV1 drops a trailing /v1, which the SDK adds itself; users coming from
// OpenAI-style settings often include it.
func trimV1(base string) string {
	base = strings.TrimRight(base, "/")
	return strings.TrimSuffix(base, "/v1")
}

// Name returns "anthropic:" and the model name.
func (m *Model) Name() string { return provider + ":" + m.model }

// Stream sends one request and streams the answer. The sequence ends with
// exactly one EventDone or EventError, unless the consumer stops early.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	return llm.StreamWith(provider, func(e *llm.Emitter) (*llm.Response, error) {
		return m.stream(ctx, req, e)
	})
}

// stream runs the request. It returns (nil, nil) when the consumer stopped.
func (m *Model) stream(ctx context.Context, req llm.Request, e *llm.Emitter) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	s := m.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	t := turn{respond: len(req.ResponseSchema) > 0, wrapped: !objectRoot(req.ResponseSchema)}
	for s.Next() {
		ev, ok, err := t.apply(s.Current())
		if err != nil {
			return nil, &llm.Error{Kind: llm.ErrMalformed, Provider: provider, Msg: "bad event sequence", Err: err}
		}
		if ok && !e.Send(ev) {
			return nil, nil
		}
	}
	if err := s.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	if !t.complete {
		return nil, &llm.Error{Kind: llm.ErrTruncated, Provider: provider, Msg: "stream ended before message_stop"}
	}
	return t.response()
}

// turn accumulates one streamed message.
type turn struct {
	acc      sdk.Message
	calls    []llm.ToolCall
	complete bool // message_stop arrived
	// respond is whether the request offered the respond tool (a response
	// schema), wrapped whether its schema was wrapped in an object; answer
	// is the final answer the model gave through it.
	respond, wrapped bool
	answer           *string
	// deltas holds the text and thinking streamed into each block since it
	// started. The SDK's Accumulate appends each delta to a string, which
	// copies the whole block every time (quadratic: a 10 MB answer took
	// 27 s); a builder per block is linear, and the block gets its text
	// once, before its stop event refreshes the block's JSON.
	deltas map[int64]*blockText
}

// blockText is the text and thinking streamed into one content block.
type blockText struct{ text, thinking strings.Builder }

// addDelta records a text or thinking delta for block i.
func (t *turn) addDelta(i int64, text, thinking string) error {
	if i < 0 || i >= int64(len(t.acc.Content)) {
		return fmt.Errorf("content_block_delta for block %d of %d", i, len(t.acc.Content))
	}
	if t.deltas == nil {
		t.deltas = map[int64]*blockText{}
	}
	b := t.deltas[i]
	if b == nil {
		b = &blockText{}
		t.deltas[i] = b
	}
	b.text.WriteString(text)
	b.thinking.WriteString(thinking)
	return nil
}

// settle moves the text streamed into block i into the block.
func (t *turn) settle(i int64) {
	b := t.deltas[i]
	if b == nil || i < 0 || i >= int64(len(t.acc.Content)) {
		return
	}
	cb := &t.acc.Content[i]
	cb.Text += b.text.String()
	cb.Thinking += b.thinking.String()
	delete(t.deltas, i)
}

// apply folds one stream event into the message and returns the neutral
// event it yields, if any.
func (t *turn) apply(ev sdk.MessageStreamEventUnion) (llm.Event, bool, error) {
	if ev.Type == "content_block_delta" {
		switch ev.Delta.Type {
		case "text_delta":
			if err := t.addDelta(ev.Index, ev.Delta.Text, ""); err != nil {
				return llm.Event{}, false, err
			}
			return llm.Event{Kind: llm.EventText, Text: ev.Delta.Text}, ev.Delta.Text != "", nil
		case "thinking_delta":
			if err := t.addDelta(ev.Index, "", ev.Delta.Thinking); err != nil {
				return llm.Event{}, false, err
			}
			return llm.Event{Kind: llm.EventThinking, Text: ev.Delta.Thinking}, ev.Delta.Thinking != "", nil
		}
	}
	switch ev.Type {
	case "content_block_start", "content_block_stop":
		t.settle(ev.Index)
	case "message_stop":
		for i := range t.deltas {
			t.settle(i)
		}
	}
	var call *llm.ToolCall
	if ev.Type == "content_block_stop" && ev.Index >= 0 && ev.Index < int64(len(t.acc.Content)) {
		// Read the tool input before Accumulate: on block stop it replaces
		// input that is not valid JSON with {}, and the tool must see the
		// raw text to report the error to the model.
		if cb := t.acc.Content[ev.Index]; cb.Type == "tool_use" {
			call = &llm.ToolCall{ID: cb.ID, Name: cb.Name, Args: toolArgs(cb.Input)}
		}
	}
	if err := t.acc.Accumulate(ev); err != nil {
		return llm.Event{}, false, err
	}
	switch ev.Type {
	case "content_block_stop":
		if call != nil && t.respond && call.Name == respondTool {
			a := answerText(call.Args, t.wrapped)
			t.answer = &a
			return llm.Event{Kind: llm.EventText, Text: a}, true, nil
		}
		if call != nil {
			t.calls = append(t.calls, *call)
			return llm.Event{Kind: llm.EventToolCall, Call: call}, true, nil
		}
	case "message_stop":
		t.complete = true
	}
	return llm.Event{}, false, nil
}

// toolArgs copies a tool_use input; a tool without arguments streams only
// "" and means {}.
func toolArgs(in json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(in))) == 0 {
		return json.RawMessage(`{}`)
	}
	return append(json.RawMessage(nil), in...)
}

// response builds the neutral response of a complete message.
func (t *turn) response() (*llm.Response, error) {
	var text strings.Builder
	for _, cb := range t.acc.Content {
		if cb.Type == "text" {
			text.WriteString(cb.Text)
		}
	}
	// The blocks as request params, thinking signatures included, so that
	// the next request can send this message back exactly.
	native, err := json.Marshal(t.acc.ToParam().OfAssistant.Content)
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrMalformed, Provider: provider, Msg: "encode content blocks", Err: err}
	}
	// input_tokens leaves out the cached prompt; llm.Usage.Input counts it.
	u := t.acc.Usage
	resp := &llm.Response{
		Message: llm.Message{
			Role:   llm.RoleAssistant,
			Text:   text.String(),
			Calls:  t.calls,
			Native: &llm.Native{Provider: provider, Data: native},
		},
		Usage: llm.Usage{
			Input:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
			Output:     int(u.OutputTokens),
			CacheRead:  int(u.CacheReadInputTokens),
			CacheWrite: int(u.CacheCreationInputTokens),
		},
		Stop:  stopReason(t.acc.StopReason, len(t.calls) > 0),
		Model: string(t.acc.Model),
	}
	if t.answer != nil {
		// The answer is the message: a plain text block when sent back, as
		// the respond call has no result to pair with.
		resp.Message.Text = *t.answer
		resp.Message.Native = nil
		resp.Stop = llm.StopEnd
	}
	return resp, nil
}

// stopReason normalises Anthropic's stop_reason.
func stopReason(r sdk.StopReason, calls bool) llm.StopReason {
	switch r {
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	}
	if calls {
		return llm.StopToolUse
	}
	return llm.StopEnd
}
