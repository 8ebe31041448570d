package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ResponseSchema is the JSON Schema a run's final answer must satisfy:
// given to the model (natively where the provider has structured output,
// and in the system prompt) and checked when the command's turns end.
type ResponseSchema struct {
	// Path is where the schema came from, named in errors.
	Path string
	// Raw is the schema as compact JSON.
	Raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// NewResponseSchema is the schema raw (compact JSON) read from path and
// resolved as rs.
func NewResponseSchema(path string, raw json.RawMessage, rs *jsonschema.Resolved) *ResponseSchema {
	return &ResponseSchema{Path: path, Raw: raw, resolved: rs}
}

// SchemaError says the final answer was not valid against the schema,
// even after the model was asked once more (exit 1).
type SchemaError struct {
	Path string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the answer is not valid against %s, even when asked again: %v", e.Path, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// Apply gives the schema to the model: in the request, for the providers'
// native structured output, and in the system prompt, for every provider
// (Gemini before 3 cannot have tools and a response schema together, and
// a schema whose root is not an object has no native form on OpenAI).
func (s *ResponseSchema) Apply(o *Options) {
	if s == nil {
		return
	}
	o.ResponseSchema = s.Raw
	o.System += "\n\n# Answer format\n\nYour final answer must be one JSON document valid against the JSON Schema below, " +
		"and nothing else: no prose before or after it, no code fences. Use the tools first if you need them.\n\n" +
		string(s.Raw) + "\n"
}

// retry checks the answer of a command's turns: when it is not valid, the
// model is asked once more in the same session with the validation error,
// and a second invalid answer ends the command with a *SchemaError. On
// success Outcome.Text is the answer as compact JSON with sorted keys.
func (s *ResponseSchema) retry(ctx context.Context, opts Options, p Progress, out Outcome) (Outcome, error) {
	doc, verr := s.Check(out.Text)
	if verr == nil {
		out.Text = doc
		return out, nil
	}
	p.warn("the answer is not valid against %s (%v); asking the model once more", s.Path, verr)
	opts.Start, opts.Respec = nil, nil
	more, err := Run(ctx, opts, retrySchemaPrompt(verr))
	out = out.Add(more)
	if err != nil {
		return out, err
	}
	if doc, verr = s.Check(more.Text); verr != nil {
		return out, closeTurns(ctx, opts, &SchemaError{Path: s.Path, Err: verr})
	}
	out.Text = doc
	return out, nil
}

func retrySchemaPrompt(err error) string {
	return "Your answer is not valid against the JSON Schema: " + err.Error() +
		"\nAnswer again with only the corrected JSON document: no prose, no code fences."
}

// Check validates an answer and returns it as compact JSON with sorted
// keys (one line, so `head -1` and prefix tests in shell scripts work).
func (s *ResponseSchema) Check(answer string) (string, error) {
	text := extractJSON(answer)
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := s.resolved.Validate(v); err != nil {
		return "", err
	}
	return canonicalAnswer(text)
}

// extractJSON takes the JSON document out of an answer: inside code
// fences, or between prose, as models sometimes write it despite the
// instruction.
func extractJSON(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "```") {
		if i := strings.IndexByte(t, '\n'); i >= 0 {
			t = t[i+1:]
		}
		t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "```"))
	}
	if json.Valid([]byte(t)) {
		return t
	}
	start := strings.IndexAny(t, "{[")
	end := strings.LastIndexAny(t, "}]")
	if start >= 0 && end > start && json.Valid([]byte(t[start:end+1])) {
		return t[start : end+1]
	}
	return t
}

// canonicalAnswer re-encodes a document compactly with sorted keys, keeping
// numbers exactly as written and <, >, & unescaped.
func canonicalAnswer(text string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode the answer: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// schemaTypes are the values JSON Schema allows for "type".
var schemaTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// CheckSchemaTypes finds a "type" that names no JSON Schema type (such as
// "objekt"), which the resolver accepts and which would make every answer
// fail. v is the schema document decoded into any; at names where it sits
// ("#" for the root). Values that are data, not schemas (enum, const,
// default, examples), are not looked into.
func CheckSchemaTypes(v any, at string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "enum", "const", "default", "examples":
				continue
			case "type":
				var names []any
				switch t := sub.(type) {
				case string:
					names = []any{t}
				case []any:
					names = t
				}
				for _, n := range names {
					if s, ok := n.(string); ok && !schemaTypes[s] {
						return fmt.Errorf("%s/type: %q is not a type (use object, array, string, number, integer, boolean or null)", at, s)
					}
				}
				if _, isSchema := sub.(map[string]any); !isSchema {
					continue
				}
			}
			if err := CheckSchemaTypes(sub, at+"/"+k); err != nil {
				return err
			}
		}
	case []any:
		for i, sub := range v {
			if err := CheckSchemaTypes(sub, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
