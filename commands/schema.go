package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"decode/agent"
	"decode/secrets"
)

// The JSON Schema library is github.com/google/jsonschema-go rather than
// santhosh-tekuri/jsonschema: the latter compiles every draft's
// metaschema in its package init, 4.5 ms and 1.7 MB on every start of
// decode (--version included), against 0.25 ms here.

// responseSchema is a --schema file: the JSON Schema the final answer must
// satisfy, given to the model (natively where the provider has structured
// output, and in the system prompt) and checked after the run.
type responseSchema struct {
	path     string
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// SchemaError says the final answer was not valid against the --schema
// file, even after the model was asked once more (exit 1).
type SchemaError struct {
	Path string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the answer is not valid against %s, even when asked again: %v", e.Path, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// loadSchema reads and resolves a schema file; "" means no schema. A file
// that is not a usable schema is a usage error, found before anything runs.
// A path inside root (the repository) must resolve inside it or also (see
// secrets.Confine).
func loadSchema(path, root string, also ...string) (*responseSchema, error) {
	if path == "" {
		return nil, nil
	}
	data, err := secrets.ReadFile(path, root, also...)
	if err != nil {
		return nil, usageErrorf("--schema: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, usageErrorf("--schema %s is not a JSON Schema: %v", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, usageErrorf("--schema %s: %v", path, err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err == nil {
		if err := checkSchemaTypes(doc, "#"); err != nil {
			return nil, usageErrorf("--schema %s is not a valid JSON Schema: %v", path, err)
		}
	}
	var raw bytes.Buffer
	if err := json.Compact(&raw, data); err != nil {
		return nil, usageErrorf("--schema %s is not JSON: %v", path, err)
	}
	return &responseSchema{path: path, raw: raw.Bytes(), resolved: rs}, nil
}

// schema is the run's --schema: the file's, or for a resumed session with
// no --schema, the one it recorded.
func (o *AgentOptions) schema(root, dir string) (*responseSchema, error) {
	if len(o.schemaRaw) > 0 {
		return parseSchema(o.SchemaFile, o.schemaRaw)
	}
	return loadSchema(o.SchemaFile, firstNonEmpty(root, dir), o.F.configDir())
}

// parseSchema resolves a schema recorded in a session.
func parseSchema(path string, raw []byte) (*responseSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the session's recorded schema (%s) is not a JSON Schema: %w", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the session's recorded schema (%s): %w", path, err)
	}
	return &responseSchema{path: path, raw: raw, resolved: rs}, nil
}

// apply gives the schema to the model: in the request, for the providers'
// native structured output, and in the system prompt, for every provider
// (Gemini before 3 cannot have tools and a response schema together, and
// a schema whose root is not an object has no native form on OpenAI).
func (s *responseSchema) apply(o *agent.Options) {
	if s == nil {
		return
	}
	o.ResponseSchema = s.raw
	o.System += "\n\n# Answer format\n\nYour final answer must be one JSON document valid against the JSON Schema below, " +
		"and nothing else: no prose before or after it, no code fences. Use the tools first if you need them.\n\n" +
		string(s.raw) + "\n"
}

// withSchema wraps a command's turns: the final answer is checked against
// the schema; when it is not valid, the model is asked once more in the
// same session with the validation error, and a second invalid answer ends
// the command with a *SchemaError. On success Outcome.Text is the answer
// as compact JSON with sorted keys, the form printed on stdout.
func withSchema(s *responseSchema, warn func(string), d *driver) *driver {
	if s == nil {
		return d
	}
	w := &driver{noPrompt: d != nil && d.noPrompt}
	w.turns = func(ctx context.Context, opts agent.Options, prompt string) (agent.Outcome, error) {
		out, err := d.run(ctx, opts, prompt)
		if err != nil {
			return out, err
		}
		doc, verr := s.check(out.Text)
		if verr == nil {
			out.Text = doc
			return out, nil
		}
		warn(fmt.Sprintf("the answer is not valid against %s (%v); asking the model once more", s.path, verr))
		opts.Start, opts.Respec = nil, nil
		more, err := agent.Run(ctx, opts, retrySchemaPrompt(verr))
		out = out.Add(more)
		if err != nil {
			return out, err
		}
		if doc, verr = s.check(more.Text); verr != nil {
			return out, closeTurns(ctx, opts, &SchemaError{Path: s.path, Err: verr})
		}
		out.Text = doc
		return out, nil
	}
	return w
}

func retrySchemaPrompt(err error) string {
	return "Your answer is not valid against the JSON Schema: " + err.Error() +
		"\nAnswer again with only the corrected JSON document: no prose, no code fences."
}

// check validates an answer and returns it as compact JSON with sorted
// keys (one line, so `head -1` and prefix tests in shell scripts work).
func (s *responseSchema) check(answer string) (string, error) {
	text := extractJSON(answer)
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := s.resolved.Validate(v); err != nil {
		return "", err
	}
	return canonicalJSON(text)
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

// canonicalJSON re-encodes a document compactly with sorted keys, keeping
// numbers exactly as written and <, >, & unescaped.
func canonicalJSON(text string) (string, error) {
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

// checkSchemaTypes finds a "type" that names no JSON Schema type (such as
// "objekt"), which the resolver accepts and which would make every answer
// fail. Values that are data, not schemas (enum, const, default,
// examples), are not looked into.
func checkSchemaTypes(v any, at string) error {
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
			if err := checkSchemaTypes(sub, at+"/"+k); err != nil {
				return err
			}
		}
	case []any:
		for i, sub := range v {
			if err := checkSchemaTypes(sub, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
