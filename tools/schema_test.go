package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sampleItem struct {
	Name string `json:"name" desc:"item name"`
	N    int    `json:"n,omitempty"`
}

type sampleArgs struct {
	Path    string       `json:"path" desc:"a path"`
	Count   int          `json:"count,omitempty" desc:"how many"`
	Ratio   float64      `json:"ratio,omitempty"`
	Force   bool         `json:"force,omitempty"`
	Tags    []string     `json:"tags,omitempty"`
	Items   []sampleItem `json:"items,omitempty"`
	private int
	Skipped string `json:"-"`
}

func TestArgSpecSchema(t *testing.T) {
	spec := newArgSpec[sampleArgs]()
	assert.JSONEq(t, `{
		"type":"object",
		"properties":{
			"path":{"type":"string","description":"a path"},
			"count":{"type":"integer","description":"how many"},
			"ratio":{"type":"number"},
			"force":{"type":"boolean"},
			"tags":{"type":"array","items":{"type":"string"}},
			"items":{"type":"array","items":{"type":"object","properties":{
				"name":{"type":"string","description":"item name"},
				"n":{"type":"integer"}},"required":["name"]}}
		},
		"required":["path"]}`, string(spec.schema))
	assert.Equal(t, `{"path": string, "count"?: integer, "ratio"?: number, "force"?: boolean, "tags"?: [string, ...], "items"?: [{"name": string, "n"?: integer}, ...]}`, spec.usage)

	// Every built-in tool's schema is a valid JSON Schema.
	ws, _, _ := newTestWorkspace(t)
	for _, tl := range FileTools(ws) {
		var doc any
		require.NoError(t, json.Unmarshal(tl.Spec().Schema, &doc))
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource("s.json", doc))
		_, err := c.Compile("s.json")
		assert.NoError(t, err, tl.Spec().Name)
	}
}

func TestDecodeArgsStrict(t *testing.T) {
	spec := newArgSpec[sampleArgs]()
	good := `{"path":"a","count":3,"ratio":0.5,"force":true,"tags":["x"],"items":[{"name":"i","n":2}]}`
	v, err := decodeArgs[sampleArgs](spec, json.RawMessage(good))
	require.NoError(t, err)
	assert.Equal(t, sampleArgs{Path: "a", Count: 3, Ratio: 0.5, Force: true, Tags: []string{"x"}, Items: []sampleItem{{"i", 2}}}, v)

	v, err = decodeArgs[sampleArgs](spec, json.RawMessage(`{"path":"a","count":null}`))
	require.NoError(t, err, "null is absent")
	assert.Equal(t, "a", v.Path)

	for args, want := range map[string]string{
		``:                               `missing required field "path"`,
		`{}`:                             `missing required field "path"`,
		`{"path":null}`:                  `missing required field "path"`,
		`{"path":"a"`:                    `not valid JSON`,
		`["a"]`:                          `not a JSON object`,
		`"a"`:                            `not a JSON object`,
		`{"path":1}`:                     `field "path" must be a string, got 1`,
		`{"path":"a","count":"3"}`:       `field "count" must be an integer, got "3"`,
		`{"path":"a","count":1.5}`:       `field "count" must be an integer`,
		`{"path":"a","force":"yes"}`:     `field "force" must be a boolean`,
		`{"path":"a","tags":"x"}`:        `field "tags" must be an array`,
		`{"path":"a","tags":[1]}`:        `field "tags[0]" must be a string`,
		`{"path":"a","items":[{"n":1}]}`: `missing required field "items[0].name"`,
		`{"path":"a","items":[{"name":"i","x":1}]}`: `unknown field "items[0].x"`,
		`{"path":"a","file_path":"b"}`:              `unknown field "file_path"`,
	} {
		_, err := decodeArgs[sampleArgs](spec, json.RawMessage(args))
		if assert.Error(t, err, args) {
			assert.Contains(t, err.Error(), want, args)
			assert.Contains(t, err.Error(), `Expected {"path": string`, "the message shows what is expected")
		}
	}
}

func TestToolReportsBadArgumentsAsResult(t *testing.T) {
	h := newFileHarness(t)
	for _, tool := range []string{"read", "write", "edit", "multi_edit", "glob", "grep"} {
		for _, args := range []string{`{"path":`, `{"pattern": 3, "path": 3}`, `{"nope": 1}`} {
			msg := h.fails(tool, args)
			assert.Contains(t, msg, "invalid arguments", "%s %s", tool, args)
			assert.Contains(t, msg, "Expected {", "%s %s", tool, args)
		}
	}
}

func TestPanickingToolIsAnErrorResult(t *testing.T) {
	tl := newFuncTool("boom", "Explodes.", true, func(ctx context.Context, a struct {
		X string `json:"x,omitempty"`
	}) (Result, error) {
		var m map[string]int
		m["x"]++ // a nil map write panics
		return Result{}, nil
	})
	res, err := tl.Run(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "internal error in tool boom")
	assert.Contains(t, res.Content, "nil map")
	assert.Equal(t, "boom: internal error", res.Note)
}

func TestRegistry(t *testing.T) {
	mk := func(name string, ro bool) Tool {
		return newFuncTool(name, "d", ro, func(context.Context, struct{}) (Result, error) { return Result{Content: name}, nil })
	}
	r := NewRegistry(mk("b", false), mk("a", true), mk("c", true))
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"b", "a", "c"}, names, "registration order")
	tl, ok := r.Get("a")
	require.True(t, ok)
	res, err := tl.Run(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "a", res.Content)
	_, ok = r.Get("zz")
	assert.False(t, ok)
	assert.Len(t, r.ReadOnly().Tools(), 2)
	_, ok = r.ReadOnly().Get("b")
	assert.False(t, ok, "read-only registry drops b")
	assert.Panics(t, func() { NewRegistry(mk("a", true), mk("a", false)) })
}

func TestNoteIsOneLine(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.txt", "a\nb\n")
	res := h.ok("grep", map[string]string{"pattern": "a\nb"})
	assert.NotContains(t, res.Note, "\n")
}
