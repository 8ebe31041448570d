package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"decode/agent/llm"
	"decode/tools"
)

// maxDescription caps a tool's description: some servers send pages.
const maxDescription = 2048

// Tool is one tool of an MCP server, offered to the model as
// mcp__server__tool.
type Tool struct {
	conn   *Conn
	remote string // the name on the server
	spec   llm.ToolSpec
	hint   bool // the server's readOnlyHint
}

func newTool(c *Conn, t *sdk.Tool) *Tool {
	raw, _ := json.Marshal(t.InputSchema)
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	if len(desc) > maxDescription {
		desc = desc[:maxDescription] + "..."
	}
	return &Tool{
		conn:   c,
		remote: t.Name,
		spec: llm.ToolSpec{
			Name:        ToolName(c.Server.Name, t.Name),
			Description: strings.TrimSpace(fmt.Sprintf("(MCP server %s) %s", c.Server.Name, desc)),
			Schema:      CleanSchema(raw),
		},
		hint: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}
}

// Spec describes the tool to the model.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// ReadOnly reports whether the tool counts as read-only for the gate: only
// when the user's own config marks its server read_only. A server's own
// readOnlyHint is advice (see ServerSaysReadOnly), never permission.
func (t *Tool) ReadOnly() bool { return t.conn.Server.TrustedReadOnly() }

// External marks the tool as one whose effects decode cannot see: a call
// that lost its result in a crash is reported as interrupted, never run
// again.
func (t *Tool) External() bool { return true }

// ServerSaysReadOnly reports the server's readOnlyHint.
func (t *Tool) ServerSaysReadOnly() bool { return t.hint }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.conn.Server.Name }

// Remote is the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// SpecBytes is the size of the tool's definition in a request.
func (t *Tool) SpecBytes() int {
	b, _ := json.Marshal(t.spec)
	return len(b)
}

// Run calls the tool within the server's tool timeout. A server that
// fails, times out or answers with an error is an error result the model
// sees; the run goes on.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	s := t.conn.Server
	if t.conn.session == nil {
		return tools.Result{IsError: true, Content: fmt.Sprintf("MCP server %s is not connected", s.Name), Note: t.spec.Name + ": not connected"}, nil
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) || args[0] != '{' {
		return tools.Result{IsError: true, Content: "invalid arguments: not a JSON object", Note: t.spec.Name + ": bad arguments"}, nil
	}
	timeout := s.toolTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := t.conn.session.CallTool(cctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil):
		return tools.Result{IsError: true, Note: t.spec.Name + ": timed out",
			Content: fmt.Sprintf("MCP server %s did not answer %s within %s (its tool_timeout); the call was cancelled. Try a smaller request, or do without it", s.Name, t.remote, timeout)}, nil
	case err != nil:
		msg := err.Error()
		if t.conn.stdio != nil {
			if tail := t.conn.stdio.stderr.String(); tail != "" {
				msg += "; its stderr ends: " + lastLine(tail)
			}
		}
		return tools.Result{IsError: true, Note: t.spec.Name + ": failed",
			Content: fmt.Sprintf("MCP server %s failed on %s: %s", s.Name, t.remote, msg)}, nil
	}
	text, images := resultText(res)
	text = capOutput(text, t.conn.opts.TempDir, t.spec.Name)
	note := fmt.Sprintf("%s: %d bytes", t.spec.Name, len(text))
	if res.IsError {
		note = t.spec.Name + ": error"
	}
	return tools.Result{Content: text, IsError: res.IsError, Note: note, Images: images}, nil
}
