package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"decode/agent/llm"
)

// config builds the generation config of one request.
func (m *Model) config(req llm.Request) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{
		// Automatic continuation would re-send a dropped stream itself;
		// llm's retry wrapper is the one retry policy.
		AutomaticContinuation: genai.Ptr(false),
		HTTPOptions:           &genai.HTTPOptions{ExtrasRequestProvider: restoreEmptyText},
	}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.maxTokens
	}
	if maxTokens > 0 {
		cfg.MaxOutputTokens = int32(maxTokens)
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, s := range req.Tools {
			decls[i] = &genai.FunctionDeclaration{Name: s.Name, Description: s.Description}
			// The raw JSON Schema: genai's typed Schema would upper-case
			// types and drop keywords it does not model.
			if len(s.Schema) > 0 && json.Valid(s.Schema) {
				decls[i].ParametersJsonSchema = toolSchema(s.Schema)
			}
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	if len(req.ResponseSchema) > 0 && (len(req.Tools) == 0 || toolsWithJSON(m.model)) {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = responseSchema(req.ResponseSchema)
	}
	return cfg
}

// toolsWithJSON reports whether a model takes function declarations and a
// JSON response schema in one request. Gemini before 3 rejects the pair
// (400 "Function calling with a response mime type: 'application/json' is
// unsupported"); for those the prompt's instruction and decode's validation
// carry the schema alone.
func toolsWithJSON(model string) bool { return gemini3(model) }

// gemini3 reports whether model is of Gemini 3 or later, which accept a
// response schema together with tools and validate thought signatures.
func gemini3(model string) bool {
	for _, old := range []string{"gemini-1", "gemini-2", "gemma-"} {
		if strings.HasPrefix(model, old) {
			return false
		}
	}
	return true
}

// responseSchema is the schema as raw JSON, without "$schema", which is not
// among the keywords Gemini accepts.
func responseSchema(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil {
		return schema
	}
	if _, ok := m["$schema"]; !ok {
		return schema
	}
	delete(m, "$schema")
	out, err := json.Marshal(m)
	if err != nil {
		return schema
	}
	return out
}

// callRef is what a function response needs from the call it answers.
type callRef struct {
	name string
	id   string // the provider's id; empty when Gemini gave none
}

// buildContents converts the conversation. The function responses to one
// model turn go in one user Content, in the order of the results.
//
// foreignSignature, when set, is put on the first function call of each
// model turn that another provider wrote (a session resumed with -m on
// another model): Gemini 3 rejects a call without a thought signature, and
// Google documents this value for history it did not produce.
func buildContents(msgs []llm.Message, foreignSignature []byte) ([]*genai.Content, error) {
	out := make([]*genai.Content, 0, len(msgs))
	var refs map[string]callRef // the calls of the last model turn, by neutral id
	for i, msg := range msgs {
		var c *genai.Content
		switch msg.Role {
		case llm.RoleAssistant:
			c, refs = modelContent(msg, foreignSignature)
		case llm.RoleUser, llm.RoleTool:
			c = userContent(msg, refs)
		default:
			return nil, &llm.Error{Kind: llm.ErrBadRequest, Provider: provider,
				Msg: fmt.Sprintf("message %d: unknown role %q", i, msg.Role)}
		}
		if c != nil && len(c.Parts) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// modelContent replays this adapter's own parts exactly (thought
// signatures must come back unchanged) or builds parts from the neutral
// fields, and returns the turn's calls for the responses that follow.
func modelContent(msg llm.Message, foreignSignature []byte) (*genai.Content, map[string]callRef) {
	refs := make(map[string]callRef, len(msg.Calls))
	if msg.Native != nil && msg.Native.Provider == provider {
		var parts []*genai.Part
		if err := json.Unmarshal(msg.Native.Data, &parts); err == nil && len(parts) > 0 {
			// The neutral calls are the native function calls, in order.
			n := 0
			for _, p := range parts {
				if p == nil || p.FunctionCall == nil {
					continue
				}
				if n < len(msg.Calls) {
					refs[msg.Calls[n].ID] = callRef{name: p.FunctionCall.Name, id: p.FunctionCall.ID}
				}
				n++
			}
			return &genai.Content{Role: genai.RoleModel, Parts: parts}, refs
		}
		// Unreadable native data: fall back to the neutral fields.
	}
	var parts []*genai.Part
	if msg.Text != "" {
		parts = append(parts, &genai.Part{Text: msg.Text})
	}
	for i, c := range msg.Calls {
		// Ids of other providers mean nothing to Gemini and are not sent.
		p := &genai.Part{FunctionCall: &genai.FunctionCall{Name: c.Name, Args: argsMap(c.Args)}}
		if i == 0 {
			p.ThoughtSignature = foreignSignature
		}
		parts = append(parts, p)
		refs[c.ID] = callRef{name: c.Name}
	}
	return &genai.Content{Role: genai.RoleModel, Parts: parts}, refs
}

// userContent holds the function responses, then the text, then the
// images as inlineData parts.
func userContent(msg llm.Message, refs map[string]callRef) *genai.Content {
	var parts []*genai.Part
	for _, r := range msg.Results {
		ref := refs[r.CallID]
		name := r.Name
		if name == "" {
			name = ref.name
		}
		// Gemini's convention: "output" for a result, "error" for a failure.
		key := "output"
		if r.IsError {
			key = "error"
		}
		parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
			ID: ref.id, Name: name, Response: map[string]any{key: r.Content},
		}})
	}
	if msg.Text != "" {
		parts = append(parts, &genai.Part{Text: msg.Text})
	}
	for _, img := range msg.Images {
		parts = append(parts, &genai.Part{InlineData: &genai.Blob{MIMEType: img.MIME, Data: img.Data}})
	}
	return &genai.Content{Role: genai.RoleUser, Parts: parts}
}

// argsMap decodes a call's arguments; arguments that are not a JSON object
// (the tool already answered with an error) are sent as {}.
func argsMap(args json.RawMessage) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // keep large integers exact
	if dec.Decode(&m) != nil {
		return map[string]any{}
	}
	return m
}

// restoreEmptyText puts back `"text": ""` on parts that carry only a thought
// signature. Gemini 3 ends an answer with such a part and it is to be sent
// back as it came, but genai's Part drops empty text (omitempty), leaving a
// part without data.
func restoreEmptyText(body map[string]any) map[string]any {
	// The keys of a part's data; a part needs one of them.
	dataFields := []string{
		"text", "inlineData", "fileData", "functionCall", "functionResponse",
		"executableCode", "codeExecutionResult", "toolCall", "toolResponse",
	}
	for _, c := range asMaps(body["contents"]) {
		for _, p := range asMaps(c["parts"]) {
			if _, ok := p["thoughtSignature"]; !ok {
				continue
			}
			if !hasAny(p, dataFields) {
				p["text"] = ""
			}
		}
	}
	return body
}

// asMaps reads a JSON array of objects as genai's converters leave it.
func asMaps(v any) []map[string]any {
	switch v := v.(type) {
	case []map[string]any:
		return v
	case []any:
		out := make([]map[string]any, 0, len(v))
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}
