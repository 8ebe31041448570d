package session

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sync"
)

// Redacted replaces a secret in a stored line.
const Redacted = "[REDACTED]"

// secretPattern matches known API key formats. The first group is what
// precedes the key (start, a non-key character, or a JSON escape such as \n)
// and is kept, so that "task-..." or "disk-..." never look like "sk-...".
var secretPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_-]|\\[nrt])(` +
		`sk-[A-Za-z0-9_-]{20,}` + // OpenAI, Anthropic (sk-ant-...), OpenRouter (sk-or-...)
		`|AIza[0-9A-Za-z_-]{35}` + // Google
		`|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}` + // GitHub
		`|xox[abposr]-[A-Za-z0-9-]{10,}` + // Slack
		`|(?:AKIA|ASIA)[0-9A-Z]{16}` + // AWS access key ids
		`)`)
})

// secretPrefixes lets the common case (no secret at all) skip the regexp.
var secretPrefixes = [][]byte{
	[]byte("sk-"), []byte("AIza"), []byte("ghp_"), []byte("gho_"), []byte("ghu_"),
	[]byte("ghs_"), []byte("ghr_"), []byte("github_pat_"),
	[]byte("xox"), []byte("AKIA"), []byte("ASIA"),
}

// redactBuiltin replaces known key formats in an encoded line.
func redactBuiltin(line []byte) []byte {
	found := false
	for _, p := range secretPrefixes {
		if bytes.Contains(line, p) {
			found = true
			break
		}
	}
	if !found {
		return line
	}
	re := secretPattern()
	idx := re.FindAllSubmatchIndex(line, -1)
	if idx == nil {
		return line
	}
	out := make([]byte, 0, len(line))
	prev := 0
	for _, m := range idx {
		out = append(out, line[prev:m[4]]...) // up to the key, keeping group 1
		out = append(out, Redacted...)
		prev = m[5]
	}
	return append(out, line[prev:]...)
}

// ValuesRedactor returns a redactor for Store.SetRedactor that replaces each
// of values (the values of configured secret variables) wherever it appears
// in a line, raw or JSON-escaped. Values shorter than 8 bytes are ignored:
// redacting them would mangle ordinary text.
func ValuesRedactor(values ...string) func([]byte) []byte {
	var olds [][]byte
	for _, v := range values {
		if len(v) < 8 {
			continue
		}
		olds = append(olds, []byte(v))
		if e := jsonEscaped(v); !bytes.Equal(e, []byte(v)) {
			olds = append(olds, e)
		}
	}
	return func(line []byte) []byte {
		for _, old := range olds {
			if bytes.Contains(line, old) {
				line = bytes.ReplaceAll(line, old, []byte(Redacted))
			}
		}
		return line
	}
}

// jsonEscaped returns s as it appears inside a JSON string written by this
// package (no HTML escaping), without the quotes.
func jsonEscaped(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}
