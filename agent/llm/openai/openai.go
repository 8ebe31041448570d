// Package openai adapts OpenAI-compatible chat completion APIs (OpenAI,
// OpenRouter, DeepSeek, Ollama, llama.cpp, vLLM) to llm.Model through
// github.com/sashabaranov/go-openai. SDK types stay inside this package.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"

	"decode/agent/llm"

	goopenai "github.com/sashabaranov/go-openai"
)

// DefaultBaseURL is OpenAI's endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Model.
type Config struct {
	// APIKey is sent as a bearer token; empty sends none (Ollama, llama.cpp).
	APIKey string
	// BaseURL includes the version path ("http://localhost:11434/v1"): the
	// SDK appends /chat/completions. Empty means DefaultBaseURL.
	BaseURL string
	// Model is the provider's model name ("gpt-4.1-mini", "qwen3").
	Model string
	// Provider names the service ("openai", "openrouter", "ollama",
	// "deepseek") in Name() and in errors. Empty means "openai".
	Provider string
	// HTTPClient sends the requests; nil uses a client without a timeout,
	// as a stream may legitimately last minutes (the context bounds it).
	HTTPClient *http.Client
	// MaxTokens caps answers when the request sets no cap; 0 leaves the
	// provider's default.
	MaxTokens int
}

// Model is an OpenAI-compatible chat model. It is safe for concurrent use.
type Model struct {
	provider   string
	model      string
	apiKey     string
	baseURL    string
	httpClient *http.Client
	maxTokens  int
}

// New returns a Model for c, or an *llm.Error of kind ErrConfig when c is
// unusable.
func New(c Config) (*Model, error) {
	m := &Model{
		provider:   c.Provider,
		model:      c.Model,
		apiKey:     c.APIKey,
		baseURL:    c.BaseURL,
		httpClient: c.HTTPClient,
		maxTokens:  c.MaxTokens,
	}
	if m.provider == "" {
		m.provider = "openai"
	}
	if m.baseURL == "" {
		m.baseURL = DefaultBaseURL
	}
	if m.httpClient == nil {
		m.httpClient = &http.Client{}
	}
	if m.model == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: m.provider, Msg: "no model name given"}
	}
	u, err := url.Parse(m.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: m.provider,
			Msg: fmt.Sprintf("base URL %q is not an http(s) URL like https://api.openai.com/v1", m.baseURL)}
	}
	if c.MaxTokens < 0 {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: m.provider, Msg: "max tokens must not be negative"}
	}
	return m, nil
}

// Name is "provider:model", e.g. "openai:gpt-4.1-mini".
func (m *Model) Name() string { return m.provider + ":" + m.model }

// Stream sends req and streams the answer: text deltas as they arrive,
// reasoning deltas (DeepSeek's reasoning_content) as thinking, then every
// tool call once the stream has finished, then EventDone. Any failure ends
// the stream with one EventError carrying an *llm.Error, or the context's
// error when ctx ended.
func (m *Model) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	return llm.StreamWith(m.provider, func(e *llm.Emitter) (*llm.Response, error) {
		return m.stream(ctx, req, e)
	})
}

// stream runs the request. It returns (nil, nil) when the consumer stopped.
func (m *Model) stream(ctx context.Context, req llm.Request, e *llm.Emitter) (*llm.Response, error) {
	// A client per call, so the doer can keep this call's response
	// headers; building one is a few struct copies.
	doer := &callDoer{client: m.httpClient}
	cfg := goopenai.DefaultConfig(m.apiKey)
	cfg.BaseURL = m.baseURL
	cfg.HTTPClient = doer
	client := goopenai.NewClientWithConfig(cfg)

	stream, err := client.CreateChatCompletionStream(ctx, m.buildRequest(req))
	if err != nil {
		return nil, m.failure(ctx, phaseRequest, err, doer)
	}
	defer stream.Close()

	acc := newAccumulator()
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, m.failure(ctx, phaseStream, err, doer)
		}
		thinking, text := acc.add(chunk)
		if thinking != "" && !e.Send(llm.Event{Kind: llm.EventThinking, Text: thinking}) {
			return nil, nil
		}
		if text != "" && !e.Send(llm.Event{Kind: llm.EventText, Text: text}) {
			return nil, nil
		}
	}
	return m.finish(ctx, acc, e)
}

// finish checks that the stream really ended and yields the tool calls,
// which are complete only now, before the response.
func (m *Model) finish(ctx context.Context, acc *accumulator, e *llm.Emitter) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if acc.finish == "" {
		return nil, &llm.Error{
			Kind: llm.ErrTruncated, Provider: m.provider,
			Msg: "the stream ended without a finish_reason",
		}
	}
	resp := acc.response()
	for _, c := range resp.Message.Calls {
		if !e.Send(llm.Event{Kind: llm.EventToolCall, Call: &c}) {
			return nil, nil
		}
	}
	return &resp, nil
}

// failure is the error that ends a failed stream.
func (m *Model) failure(ctx context.Context, ph phase, err error, doer *callDoer) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return classify(m.provider, ph, err, doer.retryAfter(time.Now()))
}
