package openai

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"decode/agent/llm"

	goopenai "github.com/sashabaranov/go-openai"
)

// emptySchema stands in for a tool without a schema: OpenAI rejects
// "parameters": null.
const emptySchema = `{"type":"object","properties":{}}`

// buildRequest converts a neutral request into a streaming chat completion
// request.
func (m *Model) buildRequest(req llm.Request) goopenai.ChatCompletionRequest {
	out := goopenai.ChatCompletionRequest{
		Model:         m.model,
		Messages:      convertMessages(req.System, req.Messages),
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(emptySchema)
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  schema,
			},
		})
	}
	out.ResponseFormat = m.responseFormat(req.ResponseSchema)
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = m.maxTokens
	}
	if maxTokens > 0 {
		// OpenAI deprecated max_tokens and rejects it for reasoning models
		// (the SDK checks that client-side); most other compatible servers
		// only know max_tokens.
		if m.provider == "openai" || isReasoningModel(m.model) {
			out.MaxCompletionTokens = maxTokens
		} else {
			out.MaxTokens = maxTokens
		}
	}
	return out
}

// isReasoningModel reports whether go-openai validates model as a reasoning
// model (and so rejects max_tokens).
func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// convertMessages turns the system prompt and neutral messages into chat
// messages. Native data is ignored: the neutral fields are all OpenAI needs.
func convertMessages(system string, msgs []llm.Message) []goopenai.ChatCompletionMessage {
	out := make([]goopenai.ChatCompletionMessage, 0, len(msgs)+1)
	if system != "" {
		out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: system})
	}
	for _, msg := range msgs {
		switch msg.Role {
		case llm.RoleUser:
			out = append(out, userMessage(msg))
		case llm.RoleAssistant:
			if msg.Text == "" && len(msg.Calls) == 0 {
				// OpenAI rejects an assistant message with neither content
				// nor tool calls (an empty answer that was cut off).
				continue
			}
			out = append(out, assistantMessage(msg))
		case llm.RoleTool:
			for _, r := range msg.Results {
				content := r.Content
				if content == "" {
					// The SDK omits empty content, and a tool message
					// without content is rejected.
					content = "(no output)"
				}
				out = append(out, goopenai.ChatCompletionMessage{
					Role:       goopenai.ChatMessageRoleTool,
					Content:    content,
					ToolCallID: r.CallID,
				})
			}
		}
	}
	return out
}

// assistantMessage converts an assistant message with its tool calls. The
// arguments go back exactly as the model sent them, even when they are not
// valid JSON, so the model sees its own mistake next to the tool's error.
func assistantMessage(msg llm.Message) goopenai.ChatCompletionMessage {
	out := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: msg.Text}
	for _, c := range msg.Calls {
		args := string(c.Args)
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{
			ID:       c.ID,
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: c.Name, Arguments: args},
		})
	}
	return out
}

// responseFormat asks for JSON valid against schema: json_schema, not
// strict (strict mode rejects common keywords and needs every property
// required), for a schema whose root is an object, which the API requires;
// DeepSeek knows only json_object. Otherwise nil, and the instruction in the
// prompt and decode's validation carry the schema alone.
func (m *Model) responseFormat(schema json.RawMessage) *goopenai.ChatCompletionResponseFormat {
	if len(schema) == 0 || !objectRoot(schema) {
		return nil
	}
	if m.provider == "deepseek" {
		return &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return &goopenai.ChatCompletionResponseFormat{
		Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
			Name: "answer", Schema: schema, Strict: false,
		},
	}
}

// objectRoot reports whether a JSON Schema describes an object at its root.
func objectRoot(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	return s.Type == "object"
}

// userMessage is a user message: plain content, or, with images, content
// parts (the text, then each image as an image_url data URL).
func userMessage(msg llm.Message) goopenai.ChatCompletionMessage {
	if len(msg.Images) == 0 {
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: msg.Text}
	}
	var parts []goopenai.ChatMessagePart
	if msg.Text != "" {
		parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: msg.Text})
	}
	for _, img := range msg.Images {
		parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL, ImageURL: &goopenai.ChatMessageImageURL{
			URL: "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
		}})
	}
	return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, MultiContent: parts}
}
