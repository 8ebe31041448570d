package commands

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"decode/agent"
	"decode/secrets"
)

// The JSON Schema library is github.com/google/jsonschema-go rather than
// santhosh-tekuri/jsonschema: the latter compiles every draft's
// metaschema in its package init, 4.5 ms and 1.7 MB on every start of
// decode (--version included), against 0.25 ms here.

// loadSchema reads and resolves a schema file; "" means no schema. A file
// that is not a usable schema is a usage error, found before anything runs.
// A path inside root (the repository) must resolve inside it or also (see
// secrets.Confine).
func loadSchema(path, root string, also ...string) (*agent.ResponseSchema, error) {
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
		if err := agent.CheckSchemaTypes(doc, "#"); err != nil {
			return nil, usageErrorf("--schema %s is not a valid JSON Schema: %v", path, err)
		}
	}
	var raw bytes.Buffer
	if err := json.Compact(&raw, data); err != nil {
		return nil, usageErrorf("--schema %s is not JSON: %v", path, err)
	}
	return agent.NewResponseSchema(path, raw.Bytes(), rs), nil
}

// schema is the run's --schema: the file's, or for a resumed session with
// no --schema, the one it recorded.
func (o *AgentOptions) schema(root, dir string) (*agent.ResponseSchema, error) {
	if len(o.schemaRaw) > 0 {
		return parseSchema(o.SchemaFile, o.schemaRaw)
	}
	return loadSchema(o.SchemaFile, firstNonEmpty(root, dir), o.F.configDir())
}

// parseSchema resolves a schema recorded in a session.
func parseSchema(path string, raw []byte) (*agent.ResponseSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the session's recorded schema (%s) is not a JSON Schema: %w", path, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the session's recorded schema (%s): %w", path, err)
	}
	return agent.NewResponseSchema(path, raw, rs), nil
}
