// Package tools holds decode's built-in tools, their registry, and the
// permission gate's matching of commands and paths.
package tools

import (
	"context"
	"encoding/json"
	"time"

	"decode/agent/llm"
)

// Tool is one capability offered to the model.
type Tool interface {
	// Spec describes the tool to the model.
	Spec() llm.ToolSpec
	// ReadOnly reports whether the tool never changes anything outside decode.
	ReadOnly() bool
	// Run carries out one call. A failure the model can fix (bad arguments,
	// no match, a file outside the workspace) is a Result with IsError set; a
	// returned error means the machinery failed.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool returns to the model.
type Result struct {
	Content string
	IsError bool
	// Note is a one-line summary for humans ("edited main.go (+3 -1)").
	Note string
	// Images go to models that take images in tool results; Content
	// describes them for the others.
	Images []llm.Image
	// Seen lists the files the call read or wrote, as they were then: the
	// session records them, so that a resumed run knows what was read.
	Seen []FileSeen
}

// FileSeen is one version of a file a tool read or wrote.
type FileSeen struct {
	// Path is the resolved absolute path.
	Path string
	Mod  time.Time
	Size int64
}

// Decision is the gate's answer for one tool call.
type Decision string

// Gate decisions.
const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Verdict is a decision with the reason and the rule that produced it.
type Verdict struct {
	Decision Decision
	// Reason is shown to the model on deny and to the user on ask.
	Reason string
	// Rule is the rule that matched ("bash(go test *)"), or "" for a mode default.
	Rule string
}

// External is implemented by tools whose effects happen where decode
// cannot see them (an MCP server's tools). After a crash, a call of one
// that has no result is reported as interrupted and never run again, even
// when it counts as read-only.
type External interface {
	External() bool
}

// IsExternal reports whether t is an External tool.
func IsExternal(t Tool) bool {
	e, ok := t.(External)
	return ok && e.External()
}
