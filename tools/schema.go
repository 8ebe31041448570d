package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// argSpec is what a tool knows about its argument struct: the JSON schema
// shown to the model, the shape used to check arguments and the one-line
// usage quoted in error messages. It is derived by reflection once, when the
// tool is built, so calls only walk plain data.
type argSpec struct {
	schema json.RawMessage
	shape  *argShape
	usage  string
}

// argShape is the checked shape of a JSON object.
type argShape struct {
	fields []argField
}

// argField is one property of an argShape.
type argField struct {
	name     string
	kind     string // JSON Schema type
	required bool
	items    *argField // element of an array
	object   *argShape // properties of an object
}

// newArgSpec derives the argSpec of struct type T. Fields are named by their
// json tag, described by their desc tag, and required unless the json tag
// says omitempty. Unsupported field types panic: that is a programming
// error found the first time the tool is built.
func newArgSpec[T any]() *argSpec {
	t := reflect.TypeFor[T]()
	shape := shapeOf(t)
	var schema bytes.Buffer
	writeSchema(&schema, &argField{kind: "object", object: shape}, t, "")
	return &argSpec{schema: schema.Bytes(), shape: shape, usage: usageOf(shape)}
}

// shapeOf returns the shape of struct type t.
func shapeOf(t reflect.Type) *argShape {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools: argument type %s is not a struct", t))
	}
	s := &argShape{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		af := fieldOf(f.Type)
		af.name = name
		af.required = !strings.Contains(opts, "omitempty")
		s.fields = append(s.fields, af)
	}
	return s
}

// fieldOf returns the unnamed field of Go type t.
func fieldOf(t reflect.Type) argField {
	switch t.Kind() {
	case reflect.String:
		return argField{kind: "string"}
	case reflect.Bool:
		return argField{kind: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return argField{kind: "integer"}
	case reflect.Float32, reflect.Float64:
		return argField{kind: "number"}
	case reflect.Slice:
		items := fieldOf(t.Elem())
		return argField{kind: "array", items: &items}
	case reflect.Struct:
		return argField{kind: "object", object: shapeOf(t)}
	}
	panic(fmt.Sprintf("tools: unsupported argument type %s", t))
}

// writeSchema writes the compact JSON Schema of field f, whose Go type is t,
// keeping properties in struct order (encoding/json would sort a map).
func writeSchema(b *bytes.Buffer, f *argField, t reflect.Type, desc string) {
	b.WriteString(`{"type":`)
	writeJSONString(b, f.kind)
	if desc != "" {
		b.WriteString(`,"description":`)
		writeJSONString(b, desc)
	}
	switch f.kind {
	case "array":
		b.WriteString(`,"items":`)
		writeSchema(b, f.items, t.Elem(), "")
	case "object":
		b.WriteString(`,"properties":{`)
		var required []string
		fi := 0
		for i := range t.NumField() {
			sf := t.Field(i)
			if name, _, _ := strings.Cut(sf.Tag.Get("json"), ","); !sf.IsExported() || name == "-" {
				continue
			}
			af := &f.object.fields[fi]
			if fi > 0 {
				b.WriteByte(',')
			}
			fi++
			writeJSONString(b, af.name)
			b.WriteByte(':')
			writeSchema(b, af, sf.Type, sf.Tag.Get("desc"))
			if af.required {
				required = append(required, af.name)
			}
		}
		b.WriteByte('}')
		if len(required) > 0 {
			b.WriteString(`,"required":`)
			js, _ := json.Marshal(required)
			b.Write(js)
		}
	}
	b.WriteByte('}')
}

func writeJSONString(b *bytes.Buffer, s string) {
	js, _ := json.Marshal(s)
	b.Write(js)
}

// usageOf renders a shape the way error messages show it to the model:
// {"path": string, "limit"?: integer}.
func usageOf(s *argShape) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range s.fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f.name))
		if !f.required {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		b.WriteString(typeName(&f))
	}
	b.WriteByte('}')
	return b.String()
}

func typeName(f *argField) string {
	switch f.kind {
	case "array":
		return "[" + typeName(f.items) + ", ...]"
	case "object":
		return usageOf(f.object)
	}
	return f.kind
}

// decodeArgs decodes raw into a T after checking it strictly against spec:
// a JSON object with every required field, no unknown field and every value
// of the declared type. The error is written for the model to act on.
func decodeArgs[T any](spec *argSpec, raw json.RawMessage) (T, error) {
	var v T
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := checkObject(spec.shape, raw, ""); err != nil {
		return v, fmt.Errorf("invalid arguments: %w. Expected %s", err, spec.usage)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("invalid arguments: %w. Expected %s", err, spec.usage)
	}
	return v, nil
}

// checkObject checks that raw is an object of shape s; at names where it is.
func checkObject(s *argShape, raw json.RawMessage, at string) error {
	var m map[string]json.RawMessage
	if raw[0] != '{' {
		return fmt.Errorf("%snot a JSON object", where(at))
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%snot valid JSON (%v)", where(at), err)
	}
	for name := range m {
		if !s.has(name) {
			return fmt.Errorf("unknown field %q", at+name)
		}
	}
	for _, f := range s.fields {
		v, ok := m[f.name]
		if !ok || string(v) == "null" {
			if f.required {
				return fmt.Errorf("missing required field %q", at+f.name)
			}
			continue
		}
		if err := checkValue(&f, v, at+f.name); err != nil {
			return err
		}
	}
	return nil
}

func (s *argShape) has(name string) bool {
	for _, f := range s.fields {
		if f.name == name {
			return true
		}
	}
	return false
}

// checkValue checks that the JSON value raw has f's type.
func checkValue(f *argField, raw json.RawMessage, at string) error {
	raw = bytes.TrimSpace(raw)
	ok := len(raw) > 0
	if ok {
		switch f.kind {
		case "string":
			ok = raw[0] == '"'
		case "boolean":
			ok = string(raw) == "true" || string(raw) == "false"
		case "integer":
			_, err := strconv.ParseInt(string(raw), 10, 64)
			ok = err == nil
		case "number":
			_, err := strconv.ParseFloat(string(raw), 64)
			ok = err == nil
		case "object":
			return checkObject(f.object, raw, at+".")
		case "array":
			return checkArray(f, raw, at)
		}
	}
	if !ok {
		return fmt.Errorf("field %q must be %s, got %s", at, article(f.kind), cutString(string(raw), 40))
	}
	return nil
}

func checkArray(f *argField, raw json.RawMessage, at string) error {
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return fmt.Errorf("field %q must be an array, got %s", at, cutString(string(raw), 40))
	}
	for i, item := range items {
		if err := checkValue(f.items, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
			return err
		}
	}
	return nil
}

func where(at string) string {
	if at == "" {
		return ""
	}
	return fmt.Sprintf("field %q: ", strings.TrimSuffix(at, "."))
}

func article(kind string) string {
	switch kind {
	case "integer", "array", "object":
		return "an " + kind
	}
	return "a " + kind
}
