package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"decode/agent/llm"
)

// respondTool is the tool a request with a response schema offers for the
// final answer: Anthropic has no JSON response format, but a tool's input
// is JSON shaped by its input_schema. tool_choice "any" makes the model
// call a tool on every step, so it ends by calling this one rather than
// answering in prose; parallel calls are off so that the answer never
// arrives beside a call that still needs a result. (tool_choice "any" is
// not allowed with extended thinking, which this adapter does not enable.)
const respondTool = "respond"

// answerKey wraps a schema whose root is not an object, since input_schema
// must describe an object: the answer is then the value under this key.
const answerKey = "answer"

// respondSpec is the tool that carries the answer, and whether the schema
// had to be wrapped in an object.
func respondSpec(schema json.RawMessage) (llm.ToolSpec, bool) {
	wrapped := !objectRoot(schema)
	if wrapped {
		schema = json.RawMessage(`{"type":"object","properties":{"` + answerKey + `":` + string(schema) + `},"required":["` + answerKey + `"]}`)
	}
	return llm.ToolSpec{
		Name: respondTool,
		Description: "Give your final answer by calling this tool, once you have everything you need. " +
			"Its input is the answer, a JSON document valid against this schema. Do not answer in text.",
		Schema: schema,
	}, wrapped
}

// withRespond adds the respond tool and forces tool use.
func withRespond(p *sdk.MessageNewParams, specs []llm.ToolSpec, schema json.RawMessage) {
	spec, _ := respondSpec(schema)
	p.Tools = tools(append(append([]llm.ToolSpec(nil), specs...), spec))
	p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{DisableParallelToolUse: sdk.Bool(true)}}
}

// answerText turns the respond call's input into the answer text,
// unwrapping a schema that was wrapped.
func answerText(input json.RawMessage, wrapped bool) string {
	if wrapped {
		var m map[string]json.RawMessage
		if json.Unmarshal(input, &m) == nil {
			if v, ok := m[answerKey]; ok {
				return string(v)
			}
		}
	}
	return string(input)
}

// objectRoot reports whether a JSON Schema describes an object at its root.
func objectRoot(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Type == "object"
}
