package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCleanSchema(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"meta keywords dropped", `{"$schema":"x","$id":"y","type":"object","properties":{"a":{"type":"string","format":"uri"}},"additionalProperties":false}`,
			`{"type":"object","properties":{"a":{"type":"string","format":"uri"}},"additionalProperties":false}`},
		{"refs inlined", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P","description":"the p"}},"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}}}}}`,
			`{"type":"object","properties":{"p":{"type":"object","description":"the p","properties":{"x":{"type":"integer"}}}}}`},
		{"old definitions", `{"type":"object","properties":{"p":{"$ref":"#/definitions/P"}},"definitions":{"P":{"type":"string"}}}`,
			`{"type":"object","properties":{"p":{"type":"string"}}}`},
		{"recursion cut", `{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}}}`,
			`{"type":"object","properties":{"n":{"type":"object","properties":{"next":{"type":"object","properties":{"next":{"type":"object","properties":{"next":{"type":"object","properties":{"next":{}}}}}}}}}}}`},
		{"root anyOf merged", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"number"}}}]}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}`},
		{"no properties", `{"type":"object"}`, `{"type":"object","properties":{}}`},
		{"not a schema", `[1,2]`, `{"type":"object","properties":{}}`},
		{"empty", ``, `{"type":"object","properties":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.JSONEq(t, tc.want, string(CleanSchema(json.RawMessage(tc.in))))
		})
	}
}

func TestStructuredContentNotRepeated(t *testing.T) {
	assert.True(t, carried([]string{"Successfully wrote to a.txt"}, []byte(`{"content":"Successfully wrote to a.txt"}`)))
	assert.True(t, carried([]string{`{"sum": 5}`}, []byte(`{"sum":5}`)))
	assert.False(t, carried([]string{"done"}, []byte(`{"sum":5}`)))
	assert.False(t, carried(nil, []byte(`{}`)))
}
