// Package gemini adapts the Gemini API (through google.golang.org/genai)
// to decode's provider-neutral llm.Model. It streams text, thoughts and
// function calls, keeps the model's parts with their thought signatures for
// the next request, and classifies failures into *llm.Error kinds. It never
// retries: the retry policy is one wrapper in package llm.
package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"strings"

	"google.golang.org/genai"

	"decode/agent/llm"
)

// provider names this adapter in model names, errors and Native data.
const provider = "gemini"

// defaultBaseURL is set explicitly so that genai never falls back to
// GOOGLE_GEMINI_BASE_URL on its own: the caller resolves endpoints.
const defaultBaseURL = "https://generativelanguage.googleapis.com/"

// Config says how to reach the API.
type Config struct {
	APIKey string
	// BaseURL replaces the public endpoint; requests go to
	// {BaseURL}/v1beta/models/{Model}:streamGenerateContent?alt=sse.
	BaseURL string
	Model   string
	// HTTPClient is used for every request; nil means a plain http.Client.
	HTTPClient *http.Client
	// MaxTokens caps answers when the request does not; 0 leaves the
	// model's default.
	MaxTokens int
}

// Model streams responses of one Gemini model.
type Model struct {
	client    *genai.Client
	model     string
	maxTokens int
}

// New builds a Model on the Gemini API backend. It fails with an
// llm.ErrConfig error when the model name or the API key is missing.
func New(ctx context.Context, c Config) (*Model, error) {
	if c.Model == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: provider, Msg: "no model name"}
	}
	if c.APIKey == "" {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: provider, Msg: "no API key: set GEMINI_API_KEY or GOOGLE_API_KEY"}
	}
	base := c.BaseURL
	if base == "" {
		base = defaultBaseURL
	}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     c.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: tapClient(c.HTTPClient),
		// No RetryOptions: genai then sends each request once.
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta"},
	})
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrConfig, Provider: provider, Msg: "create client", Err: err}
	}
	return &Model{client: client, model: c.Model, maxTokens: c.MaxTokens}, nil
}

// Name returns "gemini:" and the model name.
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
	var foreign []byte
	if gemini3(m.model) {
		foreign = []byte("skip_thought_signature_validator")
	}
	contents, err := buildContents(req.Messages, foreign)
	if err != nil {
		return nil, err
	}
	w := &wire{}
	t := turn{e: e}
	chunks := m.client.Models.GenerateContentStream(withWire(ctx, w), m.model, contents, m.config(req))
	for chunk, err := range chunks {
		if err != nil {
			return nil, classify(ctx, err, w)
		}
		ok, err := t.apply(chunk)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	if t.finish == "" {
		if w.readErr != nil {
			return nil, &llm.Error{Kind: llm.ErrNetwork, Provider: provider, Msg: "stream cut", Err: w.readErr}
		}
		return nil, &llm.Error{Kind: llm.ErrTruncated, Provider: provider, Msg: "stream ended without a finish reason"}
	}
	return t.response()
}

// turn accumulates one streamed response.
type turn struct {
	e      *llm.Emitter
	parts  []*genai.Part
	calls  []llm.ToolCall
	text   strings.Builder
	usage  *genai.GenerateContentResponseUsageMetadata
	finish genai.FinishReason
	msg    string // finishMessage
	model  string
	respID string
}

// apply folds one chunk into the turn and yields its events. It reports
// false when the consumer stopped.
func (t *turn) apply(chunk *genai.GenerateContentResponse) (bool, error) {
	if chunk.UsageMetadata != nil {
		t.usage = chunk.UsageMetadata // a running total: the last one counts
	}
	if chunk.ModelVersion != "" {
		t.model = chunk.ModelVersion
	}
	if chunk.ResponseID != "" {
		t.respID = chunk.ResponseID
	}
	if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil {
		if fb := chunk.PromptFeedback; fb != nil && fb.BlockReason != "" {
			return false, &llm.Error{Kind: llm.ErrBadRequest, Provider: provider,
				Msg: strings.TrimSpace(fmt.Sprintf("prompt blocked (%s) %s", fb.BlockReason, fb.BlockReasonMessage))}
		}
		return true, nil
	}
	cand := chunk.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p != nil && !t.part(p) {
				return false, nil
			}
		}
	}
	if cand.FinishReason != "" {
		t.finish, t.msg = cand.FinishReason, cand.FinishMessage
	}
	return true, nil
}

// part keeps one model part and yields its event.
func (t *turn) part(p *genai.Part) bool {
	t.keep(p)
	switch {
	case p.FunctionCall != nil:
		call := t.call(p.FunctionCall)
		t.calls = append(t.calls, call)
		return t.e.Send(llm.Event{Kind: llm.EventToolCall, Call: &call})
	case p.Text == "":
		return true
	case p.Thought:
		return t.e.Send(llm.Event{Kind: llm.EventThinking, Text: p.Text})
	default:
		t.text.WriteString(p.Text)
		return t.e.Send(llm.Event{Kind: llm.EventText, Text: p.Text})
	}
}

// keep appends a part for replay. Adjacent plain text parts without a
// signature are merged, which loses nothing and keeps sessions small; a
// part with a signature stays exactly as it came. An empty part (the
// empty text of a closing chunk) carries nothing and would be sent back
// as a part without data, so it is dropped.
func (t *turn) keep(p *genai.Part) {
	if reflect.ValueOf(*p).IsZero() {
		return
	}
	if n := len(t.parts); n > 0 && plainText(p) && plainText(t.parts[n-1]) && p.Thought == t.parts[n-1].Thought {
		merged := *t.parts[n-1]
		merged.Text += p.Text
		t.parts[n-1] = &merged
		return
	}
	t.parts = append(t.parts, p)
}

// plainText reports a part that carries only text (or a thought summary).
// Checking that every other field is zero keeps working when genai adds
// fields.
func plainText(p *genai.Part) bool {
	if p.Text == "" {
		return false
	}
	rest := *p
	rest.Text, rest.Thought = "", false
	return reflect.ValueOf(rest).IsZero()
}

// call converts a function call. Gemini 2.5 sends no id: a local one,
// unique within the session as long as response ids are, stands in.
func (t *turn) call(fc *genai.FunctionCall) llm.ToolCall {
	id := fc.ID
	if id == "" {
		id = fmt.Sprintf("call_%d", len(t.calls)+1)
		if t.respID != "" {
			id = fmt.Sprintf("call_%s_%d", t.respID, len(t.calls)+1)
		}
	}
	args := json.RawMessage(`{}`)
	if len(fc.Args) > 0 {
		if b, err := json.Marshal(fc.Args); err == nil {
			args = b
		}
	}
	return llm.ToolCall{ID: id, Name: fc.Name, Args: args}
}

// response builds the neutral response once the stream has finished.
func (t *turn) response() (*llm.Response, error) {
	stop, err := t.stopReason()
	if err != nil {
		return nil, err
	}
	native, err := json.Marshal(t.parts)
	if err != nil {
		return nil, &llm.Error{Kind: llm.ErrMalformed, Provider: provider, Msg: "encode parts", Err: err}
	}
	resp := &llm.Response{
		Message: llm.Message{
			Role:   llm.RoleAssistant,
			Text:   t.text.String(),
			Calls:  t.calls,
			Native: &llm.Native{Provider: provider, Data: native},
		},
		Stop:  stop,
		Model: t.model,
	}
	if u := t.usage; u != nil {
		resp.Usage = llm.Usage{
			Input:     int(u.PromptTokenCount),
			Output:    int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
			CacheRead: int(u.CachedContentTokenCount),
		}
	}
	return resp, nil
}

// stopReason normalises the finish reason. Reasons that leave no usable
// answer (a blocked response, a malformed function call) are errors.
func (t *turn) stopReason() (llm.StopReason, error) {
	switch t.finish {
	case genai.FinishReasonStop, genai.FinishReasonUnspecified:
		if len(t.calls) > 0 {
			return llm.StopToolUse, nil
		}
		return llm.StopEnd, nil
	case genai.FinishReasonMaxTokens:
		return llm.StopMaxTokens, nil
	case genai.FinishReasonMalformedFunctionCall:
		// The model wrote a call that did not parse (Gemini's form of
		// invalid JSON arguments). There is no call to answer with a tool
		// error, but a new sample usually gets it right: a server-side
		// failure, retried like one.
		return "", &llm.Error{Kind: llm.ErrServer, Provider: provider,
			Msg: strings.TrimSpace(fmt.Sprintf("model stopped: %s %s", t.finish, t.msg))}
	case genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls:
		return "", &llm.Error{Kind: llm.ErrMalformed, Provider: provider,
			Msg: strings.TrimSpace(fmt.Sprintf("model stopped: %s %s", t.finish, t.msg))}
	default:
		return "", &llm.Error{Kind: llm.ErrBadRequest, Provider: provider,
			Msg: strings.TrimSpace(fmt.Sprintf("response blocked: %s %s", t.finish, t.msg))}
	}
}
