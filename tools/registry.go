package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"decode/agent/llm"
)

// Registry is an ordered set of tools, looked up by name.
type Registry struct {
	tools  []Tool
	byName map[string]Tool
}

// NewRegistry returns a registry of ts in the order given. Two tools with
// the same name are a programming error and panic.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{byName: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		name := t.Spec().Name
		if _, dup := r.byName[name]; dup {
			panic(fmt.Sprintf("tools: duplicate tool %q", name))
		}
		r.byName[name] = t
		r.tools = append(r.tools, t)
	}
	return r
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the tools in registration order.
func (r *Registry) Tools() []Tool { return append([]Tool(nil), r.tools...) }

// Specs returns the tools' specs in registration order.
func (r *Registry) Specs() []llm.ToolSpec {
	specs := make([]llm.ToolSpec, len(r.tools))
	for i, t := range r.tools {
		specs[i] = t.Spec()
	}
	return specs
}

// ReadOnly returns a registry of only the read-only tools, in the same order.
func (r *Registry) ReadOnly() *Registry {
	var ro []Tool
	for _, t := range r.tools {
		if t.ReadOnly() {
			ro = append(ro, t)
		}
	}
	return NewRegistry(ro...)
}

// funcTool is a Tool made of a typed run function: it owns the spec derived
// from T, strict decoding of the arguments and recovery from panics, so each
// tool's file holds only its own behaviour.
type funcTool[T any] struct {
	spec     llm.ToolSpec
	args     *argSpec
	readOnly bool
	run      func(ctx context.Context, args T) (Result, error)
}

// newFuncTool builds a tool named name from its description (usually an
// embedded .md file) and run function.
func newFuncTool[T any](name, desc string, readOnly bool, run func(context.Context, T) (Result, error)) *funcTool[T] {
	args := newArgSpec[T]()
	return &funcTool[T]{
		spec:     llm.ToolSpec{Name: name, Description: strings.TrimSpace(desc), Schema: args.schema},
		args:     args,
		readOnly: readOnly,
		run:      run,
	}
}

// Spec describes the tool to the model.
func (t *funcTool[T]) Spec() llm.ToolSpec { return t.spec }

// ReadOnly reports whether the tool never changes anything.
func (t *funcTool[T]) ReadOnly() bool { return t.readOnly }

// Run decodes args and runs the tool; a panic becomes an error result, so
// one broken tool cannot take the session down with it.
func (t *funcTool[T]) Run(ctx context.Context, raw json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res = Result{
				IsError: true,
				Content: fmt.Sprintf("internal error in tool %s: %v; this is a bug in decode, not in your call", t.spec.Name, p),
				Note:    t.spec.Name + ": internal error",
			}
			err = nil
		}
	}()
	args, derr := decodeArgs[T](t.args, raw)
	if derr != nil {
		return errResult(t.spec.Name+": bad arguments", derr.Error()), nil
	}
	res, err = t.run(ctx, args)
	// A note is one line even when it quotes a pattern with a newline.
	if strings.ContainsAny(res.Note, "\r\n") {
		res.Note = strings.NewReplacer("\r", " ", "\n", " ").Replace(res.Note)
	}
	return res, err
}

// errResult is a failure the model can act on.
func errResult(note, content string) Result {
	return Result{IsError: true, Content: content, Note: note}
}
