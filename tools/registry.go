package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"decode/agent/llm"
)

// Registry is an ordered set of tools, looked up by name. Some tools may
// be deferred: callable, but left out of Specs until revealed (by a search
// tool that found them), so that many tools do not fill every request.
type Registry struct {
	tools  []Tool
	byName map[string]Tool

	mu       sync.Mutex
	deferred map[string]bool // name -> still hidden
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

// Defer adds tools that are callable but not described to the model until
// Reveal names them.
func (r *Registry) Defer(ts ...Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deferred == nil {
		r.deferred = map[string]bool{}
	}
	for _, t := range ts {
		name := t.Spec().Name
		if _, dup := r.byName[name]; dup {
			panic(fmt.Sprintf("tools: duplicate tool %q", name))
		}
		r.byName[name] = t
		r.tools = append(r.tools, t)
		r.deferred[name] = true
	}
}

// Reveal adds the named deferred tools to Specs from now on; other names
// are ignored.
func (r *Registry) Reveal(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if r.deferred[n] {
			r.deferred[n] = false
		}
	}
}

// Hidden reports whether name is a deferred tool not revealed yet.
func (r *Registry) Hidden(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deferred[name]
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the tools in registration order.
func (r *Registry) Tools() []Tool { return append([]Tool(nil), r.tools...) }

// Specs returns the specs of the tools, but hidden deferred ones, in
// registration order.
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	specs := make([]llm.ToolSpec, 0, len(r.tools))
	for _, t := range r.tools {
		s := t.Spec()
		if !r.deferred[s.Name] {
			specs = append(specs, s)
		}
	}
	return specs
}

// Remember tells the tools what the session read before this process: the
// file tools then let an edit through on a file read before a pause, unless
// it changed on disk since.
func (r *Registry) Remember(seen []FileSeen) {
	for _, t := range r.tools {
		if m, ok := t.(interface{ Remember([]FileSeen) }); ok {
			m.Remember(seen)
		}
	}
}

// ReadOnly returns a registry of only the read-only tools, in the same order.
func (r *Registry) ReadOnly() *Registry {
	var ro, deferred []Tool
	for _, t := range r.tools {
		switch {
		case !t.ReadOnly():
		case r.Hidden(t.Spec().Name):
			deferred = append(deferred, t)
		default:
			ro = append(ro, t)
		}
	}
	out := NewRegistry(ro...)
	if len(deferred) > 0 {
		out.Defer(deferred...)
	}
	return out
}

// funcTool is a Tool made of a typed run function: it owns the spec derived
// from T, strict decoding of the arguments and recovery from panics, so each
// tool's file holds only its own behaviour.
type funcTool[T any] struct {
	spec     llm.ToolSpec
	args     *argSpec
	readOnly bool
	run      func(ctx context.Context, args T) (Result, error)
	// preview, when set, says what a call would change (Previewer).
	preview func(ctx context.Context, args T) string
}

// Previewer is a tool that can show what a call would change before it
// runs, for a person asked to approve it.
type Previewer interface {
	// Preview returns the unified diff the call would make, or "" when it
	// cannot tell (bad arguments, a file it may not touch, an edit that
	// would fail).
	Preview(ctx context.Context, args json.RawMessage) string
}

// Preview implements Previewer for the tools that set preview.
func (t *funcTool[T]) Preview(ctx context.Context, raw json.RawMessage) (diff string) {
	if t.preview == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	args, err := decodeArgs[T](t.args, raw)
	if err != nil {
		return ""
	}
	return t.preview(ctx, args)
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
