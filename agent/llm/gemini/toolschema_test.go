package gemini

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"decode/agent/llm"
)

func TestToolSchema(t *testing.T) {
	// A built-in tool's schema goes as it is, byte for byte.
	plain := `{"type":"object","properties":{"path":{"type":"string"},"lines":{"type":"array","items":{"type":"integer"}}},"required":["path"]}`
	assert.Equal(t, plain, string(toolSchema(json.RawMessage(plain))))

	in := `{"$schema":"x","type":"object","properties":{
		"mode":{"const":"fast"},
		"name":{"type":["string","null"]},
		"tags":{"type":"array"},
		"id":{"type":"string","items":{"type":"string"},"not":{"pattern":"^x"}},
		"pair":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string"}},
		"opt":{"anyOf":[{"type":"string","examples":["a"]},{"type":"integer"}]}},
		"additionalProperties":false}`
	want := `{"type":"object","properties":{
		"mode":{"enum":["fast"]},
		"name":{"type":"string"},
		"tags":{"type":"array","items":{"type":"string"}},
		"id":{"type":"string"},
		"pair":{"type":"array","items":{"type":"string"}},
		"opt":{"anyOf":[{"type":"string"},{"type":"integer"}]}},
		"additionalProperties":false}`
	assert.JSONEq(t, want, string(toolSchema(json.RawMessage(in))))
}

func TestToolSchemaOnTheWire(t *testing.T) {
	f := newFakeAPI(t, reply{file: "text.sse"})
	req := userPrompt("hi")
	req.Tools = []llm.ToolSpec{{Name: "mcp__s__t", Description: "d", Schema: json.RawMessage(`{"$schema":"x","type":"object","properties":{"k":{"const":1}}}`)}}
	last(t, events(f.model(t, "gemini-2.5-flash"), req))
	tools := jsonOf(t, f.requests()[0].body["tools"])
	assert.JSONEq(t, `[{"functionDeclarations":[{"name":"mcp__s__t","description":"d","parametersJsonSchema":{"type":"object","properties":{"k":{"enum":[1]}}}}]}]`, tools)
}
