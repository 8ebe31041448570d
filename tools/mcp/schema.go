package mcp

import (
	"encoding/json"
	"strings"
)

// maxRefDepth bounds how deep $refs are inlined; a recursive schema is cut
// there to an unconstrained value.
const maxRefDepth = 4

// dropKeys are keywords that no provider needs and some reject: meta
// keywords, and definitions that are inlined where they are used.
var dropKeys = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true, "$dynamicAnchor": true,
	"$defs": true, "definitions": true, "$vocabulary": true, "examples": true,
	"readOnly": true, "writeOnly": true, "deprecated": true, "contentMediaType": true,
	"contentEncoding": true,
}

// CleanSchema turns the input schema an MCP server sent into one every
// provider accepts: local $refs are inlined (#/$defs/X, #/definitions/X),
// meta keywords dropped, and the root made an object schema with
// properties (OpenAI and Anthropic reject any other root; a root anyOf or
// oneOf of objects becomes one object with the union of their properties).
// Provider adapters apply their own narrower rules on top.
func CleanSchema(raw json.RawMessage) json.RawMessage {
	var root any
	if len(raw) == 0 || json.Unmarshal(raw, &root) != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	m, _ := root.(map[string]any)
	if m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	defs := map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := m[k].(map[string]any); ok {
			for name, v := range d {
				defs["#/"+k+"/"+name] = v
			}
		}
	}
	c := cleaner{defs: defs}
	out, _ := c.clean(m, 0).(map[string]any)
	out = objectRoot(out)
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

type cleaner struct{ defs map[string]any }

// clean returns a cleaned copy of the schema v; depth counts inlined refs.
func (c cleaner) clean(v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			target, found := c.defs[ref]
			if !found || depth >= maxRefDepth {
				// An unknown or too deep reference: any value, with the
				// description kept.
				out := map[string]any{}
				if d, ok := x["description"].(string); ok {
					out["description"] = d
				}
				return out
			}
			inlined, _ := c.clean(target, depth+1).(map[string]any)
			if inlined == nil {
				inlined = map[string]any{}
			}
			if d, ok := x["description"].(string); ok {
				inlined["description"] = d
			}
			return inlined
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			switch {
			case dropKeys[k] || strings.HasPrefix(k, "x-"):
			case k == "properties" || k == "patternProperties" || k == "dependentSchemas":
				if props, ok := val.(map[string]any); ok {
					cp := make(map[string]any, len(props))
					for name, p := range props {
						cp[name] = c.clean(p, depth)
					}
					out[k] = cp
				}
			case k == "items" || k == "additionalProperties" || k == "not" || k == "contains" ||
				k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems" ||
				k == "if" || k == "then" || k == "else" || k == "propertyNames" || k == "unevaluatedProperties":
				out[k] = c.cleanAny(val, depth)
			default:
				out[k] = val
			}
		}
		return out
	case []any:
		return c.cleanAny(x, depth)
	}
	return v
}

// cleanAny cleans a schema or a list of schemas.
func (c cleaner) cleanAny(v any, depth int) any {
	if list, ok := v.([]any); ok {
		out := make([]any, len(list))
		for i, s := range list {
			out[i] = c.clean(s, depth)
		}
		return out
	}
	return c.clean(v, depth)
}

// objectRoot makes m a schema of type object with properties.
func objectRoot(m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		variants, ok := m[k].([]any)
		if !ok {
			continue
		}
		delete(m, k)
		props, _ := m["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		for _, v := range variants {
			vm, _ := v.(map[string]any)
			if p, ok := vm["properties"].(map[string]any); ok {
				for name, s := range p {
					if _, dup := props[name]; !dup {
						props[name] = s
					}
				}
			}
			if k == "allOf" {
				if req, ok := vm["required"].([]any); ok {
					m["required"] = appendUnique(m["required"], req)
				}
			}
		}
		m["properties"] = props
	}
	delete(m, "not")
	delete(m, "enum")
	delete(m, "const")
	m["type"] = "object"
	if _, ok := m["properties"].(map[string]any); !ok {
		m["properties"] = map[string]any{}
	}
	return m
}

func appendUnique(have any, add []any) []any {
	list, _ := have.([]any)
	seen := map[any]bool{}
	for _, v := range list {
		seen[v] = true
	}
	for _, v := range add {
		if !seen[v] {
			list = append(list, v)
			seen[v] = true
		}
	}
	return list
}
