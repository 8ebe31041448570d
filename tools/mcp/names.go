package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the longest tool name every provider accepts (OpenAI and
// Anthropic: ^[a-zA-Z0-9_-]{1,64}$; Gemini allows 64 with dots too).
const maxNameLen = 64

// ToolName is the name decode gives tool on server: mcp__server__tool,
// with characters providers reject replaced by _ and, when longer than 64
// characters, shortened with a hash of the full name so that two long
// names stay distinct.
func ToolName(server, tool string) string {
	full := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(full) <= maxNameLen {
		return full
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return full[:maxNameLen-len(suffix)] + suffix
}

// Prefix is the start of every tool name of server: mcp__server__.
func Prefix(server string) string { return "mcp__" + sanitize(server) + "__" }

func sanitize(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
