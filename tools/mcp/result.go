package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"decode/agent/llm"
)

// Output limits, as for bash: past either, the model sees the start and
// the whole output is saved to a file whose path it is given.
const (
	maxOutputLines = 2000
	maxOutputBytes = 50 * 1024
)

// Limits on the images a result passes on to the model.
const (
	maxImages     = 4
	maxImageBytes = 1 << 20
)

// resultText renders a tool result for the model: text as it is, images
// described (and returned, up to four of at most 1 MB each, for models that
// take images in tool results), audio described, resource links named with
// their URI, embedded text resources inlined, and structured content as
// JSON when no text part already carries it.
func resultText(r *sdk.CallToolResult) (string, []llm.Image) {
	var parts []string
	var images []llm.Image
	for _, c := range r.Content {
		switch x := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, x.Text)
		case *sdk.ImageContent:
			if len(images) < maxImages && len(x.Data) <= maxImageBytes {
				images = append(images, llm.Image{MIME: x.MIMEType, Data: x.Data})
				parts = append(parts, fmt.Sprintf("[image %d: %s, %d bytes, attached where the model takes images]", len(images), orUnknown(x.MIMEType), len(x.Data)))
			} else {
				parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not passed on (at most %d images of 1 MB)]", orUnknown(x.MIMEType), len(x.Data), maxImages))
			}
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(x.MIMEType), len(x.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, resourceLink(x))
		case *sdk.EmbeddedResource:
			parts = append(parts, embedded(x.Resource))
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil && !carried(parts, b) {
			parts = append(parts, "structured content: "+string(b))
		}
	}
	return strings.Join(parts, "\n"), images
}

// carried reports whether the text parts already hold the structured
// content (servers are asked to send both): as the same JSON, or every
// value of it (the filesystem server sends {"content": <the text>}).
func carried(parts []string, structured []byte) bool {
	var v any
	if json.Unmarshal(structured, &v) == nil {
		joined := strings.Join(parts, "\n")
		var leaves []string
		collectLeaves(v, &leaves)
		all := len(leaves) > 0
		for _, l := range leaves {
			all = all && strings.Contains(joined, l)
		}
		if all {
			return true
		}
	}
	for _, p := range parts {
		var a, b any
		if json.Unmarshal([]byte(p), &a) == nil && json.Unmarshal(structured, &b) == nil {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if bytes.Equal(ja, jb) {
				return true
			}
		}
	}
	return false
}

// collectLeaves gathers the scalar values of a JSON value as text.
func collectLeaves(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			collectLeaves(e, out)
		}
	case []any:
		for _, e := range x {
			collectLeaves(e, out)
		}
	case string:
		*out = append(*out, x)
	case nil:
	default:
		b, _ := json.Marshal(x)
		*out = append(*out, string(b))
	}
}

func resourceLink(x *sdk.ResourceLink) string {
	name := x.Name
	if x.Title != "" {
		name = x.Title
	}
	s := fmt.Sprintf("[resource link: %s <%s>", name, x.URI)
	if x.MIMEType != "" {
		s += " " + x.MIMEType
	}
	if x.Description != "" {
		s += ": " + x.Description
	}
	return s + "]"
}

func embedded(r *sdk.ResourceContents) string {
	if r == nil {
		return "[empty resource]"
	}
	if r.Blob == nil {
		return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
	}
	return fmt.Sprintf("[resource %s: %s, %d bytes of binary data, not shown]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// spillCounter numbers saved outputs within a process.
var spillCounter atomic.Int64

// capOutput cuts text past the output limits, saving the whole of it in
// dir; the model is told where.
func capOutput(text, dir, tool string) string {
	lines := strings.Count(text, "\n")
	if len(text) <= maxOutputBytes && lines < maxOutputLines {
		return text
	}
	head := text
	if len(head) > maxOutputBytes {
		head = head[:maxOutputBytes]
		for len(head) > 0 && head[len(head)-1]&0xC0 == 0x80 { // do not split a rune
			head = head[:len(head)-1]
		}
	}
	if n := 0; strings.Count(head, "\n") >= maxOutputLines {
		for i := range head {
			if head[i] == '\n' {
				if n++; n == maxOutputLines {
					head = head[:i+1]
					break
				}
			}
		}
	}
	note := fmt.Sprintf("\n[output cut at %d of %d bytes (%d lines);", len(head), len(text), lines+1)
	if path, err := save(dir, tool, text); err == nil {
		note += fmt.Sprintf(" the full output is in %s: read it in parts with the read tool]", path)
	} else {
		note += fmt.Sprintf(" saving the full output failed: %v]", err)
	}
	return head + note
}

func save(dir, tool, text string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.txt", tool, os.Getpid(), spillCounter.Add(1)))
	return path, os.WriteFile(path, []byte(text), 0o600)
}
