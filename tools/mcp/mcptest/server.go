// Package mcptest is an MCP server for decode's tests and demos, built on
// the official SDK: a few tools that cover the protocol's corners (text,
// structured content, images, resource links, $ref schemas) and servers
// that misbehave (hang at start, hang in a call, flood their output).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// png1x1 is a one-pixel PNG.
var png1x1 = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

// NewServer returns the test server. variant "2" changes the echo tool's
// schema and drops add, as a server upgraded between two runs would; extra
// adds that many more tools (tool_00, ...) of about 300 bytes each.
func NewServer(variant string, extra int) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "decode-mcptest", Version: "1.0"}, nil)
	echoSchema := `{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}`
	if variant == "2" {
		echoSchema = `{"type":"object","properties":{"text":{"type":"string"},"upper":{"type":"boolean"}},"required":["text"]}`
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: json.RawMessage(echoSchema),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct {
				Text  string `json:"text"`
				Upper bool   `json:"upper"`
			}
			json.Unmarshal(r.Params.Arguments, &a)
			if a.Upper {
				a.Text = strings.ToUpper(a.Text)
			}
			return text("echo: " + a.Text), nil
		})
	if variant != "2" {
		s.AddTool(&sdk.Tool{Name: "add", Description: "Add two numbers; the sum comes back as structured content.",
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
			func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var a struct{ A, B float64 }
				json.Unmarshal(r.Params.Arguments, &a)
				return &sdk.CallToolResult{StructuredContent: map[string]any{"sum": a.A + a.B}}, nil
			})
	}
	s.AddTool(&sdk.Tool{Name: "write_note", Description: "Write a note (says it is read-only, which it is not).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note":{"$ref":"#/$defs/note"}},"$defs":{"note":{"type":"object","properties":{"title":{"type":"string","format":"uri-reference"},"body":{"type":"string"}}}}}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("noted " + string(r.Params.Arguments)), nil
		})
	s.AddTool(&sdk.Tool{Name: "picture", Description: "Return an image and a resource link.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here it is"},
				&sdk.ImageContent{Data: png1x1, MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "file:///tmp/pixel.png", Name: "pixel.png", MIMEType: "image/png"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "cat", Description: "Return the content of a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Path string }
			json.Unmarshal(r.Params.Arguments, &a)
			data, err := os.ReadFile(a.Path)
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return text(string(data)), nil
		})
	s.AddTool(&sdk.Tool{Name: "big", Description: "Return n bytes of text in lines.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ N int }
			json.Unmarshal(r.Params.Arguments, &a)
			var b strings.Builder
			for i := 0; b.Len() < a.N; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return text(b.String()), nil
		})
	s.AddTool(&sdk.Tool{Name: "slow", Description: "Sleep for seconds, then answer.", InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"}}}`)},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Seconds float64 }
			json.Unmarshal(r.Params.Arguments, &a)
			if f := os.Getenv("MCPTEST_CALLS"); f != "" {
				if out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintln(out, "slow")
					out.Close()
				}
			}
			select {
			case <-time.After(time.Duration(a.Seconds * float64(time.Second))):
				return text("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	s.AddTool(&sdk.Tool{Name: "flood", Description: "Write endless output to stdout.", InputSchema: json.RawMessage(`{"type":"object","properties":{"junk":{"type":"boolean"}}}`)},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Junk bool }
			json.Unmarshal(r.Params.Arguments, &a)
			chunk := []byte(strings.Repeat("a", 64<<10))
			if a.Junk {
				chunk = []byte(strings.Repeat("not json ", 8<<10))
			} else {
				// One message that never ends.
				os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`)
			}
			for {
				if _, err := os.Stdout.Write(chunk); err != nil {
					os.Exit(1)
				}
			}
		})
	for i := range extra {
		name := fmt.Sprintf("tool_%02d", i)
		s.AddTool(&sdk.Tool{Name: name, Description: fmt.Sprintf("Filler tool number %d: looks up record %d in the inventory and returns its fields.", i, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the record's id"},"fields":{"type":"array","items":{"type":"string"},"description":"which fields to return"}},"required":["id"]}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text(name + " ok"), nil
			})
	}
	return s
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// Main runs a server over stdio the way mode says and returns its exit
// code: "ok" serves the tools; "hang" reads its input and never answers;
// MCPTEST_EXTRA adds filler tools; "crash" writes to stderr and exits 3; "stubborn" serves but does not exit
// when its input closes. MCPTEST_VARIANT picks the tools'
// variant, MCPTEST_PIDFILE names a file to write the pid to, and MCPTEST_CALLS a file the
// slow tool appends a line to when it starts.
func Main(mode string) int {
	if f := os.Getenv("MCPTEST_PIDFILE"); f != "" {
		os.WriteFile(f, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	switch mode {
	case "hang":
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				time.Sleep(time.Hour) // closing stdin does not stop it
			}
		}
	case "crash":
		fmt.Fprintln(os.Stderr, "mcptest: cannot open the database")
		return 3
	}
	extra, _ := strconv.Atoi(os.Getenv("MCPTEST_EXTRA"))
	err := NewServer(os.Getenv("MCPTEST_VARIANT"), extra).Run(context.Background(), &sdk.StdioTransport{})
	if mode == "stubborn" {
		time.Sleep(time.Hour) // its input closed, and it stays
	}
	if err != nil {
		return 1
	}
	return 0
}
