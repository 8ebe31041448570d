package gemini

import "encoding/json"

// geminiDrops are JSON Schema keywords Gemini's parametersJsonSchema
// rejects as unknown (seen as 400s): they are removed, which only loosens
// what the schema asks of the model.
var geminiDrops = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true,
	"prefixItems": true, "not": true, "if": true, "then": true, "else": true,
	"patternProperties": true, "dependentSchemas": true, "unevaluatedProperties": true,
	"contains": true, "minContains": true, "maxContains": true, "propertyNames": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// toolSchema adapts a tool's JSON Schema to what Gemini accepts: unknown
// keywords dropped, const as a one-value enum, a type list (["string",
// "null"]) as its first non-null type, items only on arrays and always on
// them. A schema that needs none of this is sent byte for byte.
func toolSchema(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, changed := geminiClean(v)
	if !changed {
		return raw
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw
	}
	return b
}

// geminiClean returns a cleaned copy of the schema v and whether anything
// changed.
func geminiClean(v any) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	changed := false
	out := make(map[string]any, len(m))
	for k, val := range m {
		switch {
		case geminiDrops[k]:
			changed = true
		case k == "const":
			out["enum"] = []any{val}
			changed = true
		case k == "type":
			if list, ok := val.([]any); ok {
				out[k] = firstType(list)
				changed = true
			} else {
				out[k] = val
			}
		case k == "properties" || k == "$defs" || k == "definitions":
			props, ok := val.(map[string]any)
			if !ok {
				out[k] = val
				continue
			}
			cp := make(map[string]any, len(props))
			for name, p := range props {
				c, ch := geminiClean(p)
				cp[name] = c
				changed = changed || ch
			}
			out[k] = cp
		case k == "items" || k == "additionalProperties":
			c, ch := geminiClean(val)
			out[k] = c
			changed = changed || ch
		case k == "anyOf" || k == "oneOf" || k == "allOf":
			list, ok := val.([]any)
			if !ok {
				out[k] = val
				continue
			}
			cp := make([]any, len(list))
			for i, s := range list {
				c, ch := geminiClean(s)
				cp[i] = c
				changed = changed || ch
			}
			out[k] = cp
		default:
			out[k] = val
		}
	}
	switch out["type"] {
	case "array":
		if _, ok := out["items"]; !ok {
			out["items"] = map[string]any{"type": "string"}
			changed = true
		}
	case nil:
	default:
		if _, ok := out["items"]; ok {
			delete(out, "items")
			changed = true
		}
	}
	return out, changed
}

func firstType(list []any) any {
	for _, t := range list {
		if t != "null" {
			return t
		}
	}
	return "string"
}
