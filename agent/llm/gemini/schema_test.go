package gemini

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

func TestResponseSchema(t *testing.T) {
	const schema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	const sent = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	read := []llm.ToolSpec{{Name: "read", Description: "Read a file."}}
	tests := []struct {
		name, model string
		tools       []llm.ToolSpec
		native      bool
	}{
		{name: "no tools", model: "gemini-2.5-flash", native: true},
		{name: "tools on gemini 3", model: "gemini-3-pro-preview", tools: read, native: true},
		{name: "tools on gemini 2.5 cannot have both", model: "gemini-2.5-flash", tools: read},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, reply{file: "text.sse"})
			req := userPrompt("is it ok?")
			req.Tools = tt.tools
			req.ResponseSchema = json.RawMessage(schema)
			done := last(t, events(f.model(t, tt.model), req))
			require.Equal(t, llm.EventDone, done.Kind, "final event: %+v", done)

			gen := f.requests()[0].body["generationConfig"]
			if !tt.native {
				assert.Equal(t, "{}", jsonOf(t, gen), "no response schema: it goes by the prompt only")
				return
			}
			assert.JSONEq(t, `{"responseMimeType":"application/json","responseJsonSchema":`+sent+`}`, jsonOf(t, gen))
		})
	}
}
