package commands

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// terminalSafe escapes what a terminal would act on instead of showing:
// newlines and tabs become \n, \r and \t (visible, so a command cannot hide
// a second line), other control characters and escape sequences \xNN, and
// invisible or reordering Unicode (bidi overrides, zero-width characters)
// \uNNNN. Invalid UTF-8 bytes become \xNN too.
func terminalSafe(s string) string { return escapeTerminal(s, true) }

// escapeTerminal is terminalSafe; with backslash false a backslash is kept
// as it is (for JSON, whose escapes are already visible).
func escapeTerminal(s string, backslash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, unicode.Is(unicode.Cf, r), r == 0x2028, r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// promptCall is a call as the approval prompt shows it: the whole command
// (or path, URL, pattern), or else the whole arguments, never clipped, and
// escaped for the terminal.
func promptCall(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		for _, k := range []string{"command", "path", "url", "pattern", "query"} {
			if s, ok := m[k].(string); ok && s != "" {
				if len(m) == 1 {
					return terminalSafe(s)
				}
				return terminalSafe(s) + " " + jsonSafe(without(m, k))
			}
		}
	}
	var v any
	if json.Unmarshal(args, &v) == nil {
		return jsonSafe(v)
	}
	return terminalSafe(string(args))
}

// jsonSafe is v as compact JSON, escaped for the terminal.
func jsonSafe(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return escapeTerminal(strings.TrimSuffix(b.String(), "\n"), false)
}

func without(m map[string]any, k string) map[string]any {
	out := make(map[string]any, len(m))
	for key, v := range m {
		if key != k {
			out[key] = v
		}
	}
	return out
}
