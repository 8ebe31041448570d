package secrets

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
)

// Mask replaces a secret in what decode stores, prints or sends.
const Mask = "[REDACTED]"

// minValue is the shortest known value redacted: shorter ones would mangle
// ordinary text.
const minValue = 8

// Redactor is the one redactor every exit goes through. It replaces the
// values decode knows are secret (keys it holds, secret_env values, scrubbed
// variables) wherever they appear, raw or JSON-escaped, and text with the
// shape of a well-known secret (cloud and forge tokens, private keys, JWTs,
// passwords in URLs, key = value assignments). A nil *Redactor redacts
// shapes only. It is safe for concurrent use; values may be added at any
// time.
type Redactor struct {
	values atomic.Pointer[[][]byte]
	mu     sync.Mutex // serialises Add
}

// NewRedactor returns a redactor that knows values.
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add makes values known secrets. Values shorter than 8 bytes are ignored.
func (r *Redactor) Add(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var cur [][]byte
	if p := r.values.Load(); p != nil {
		cur = *p
	}
	next := append([][]byte(nil), cur...)
	for _, v := range values {
		if len(v) < minValue {
			continue
		}
		for _, form := range [][]byte{[]byte(v), jsonEscaped(v)} {
			dup := false
			for _, old := range next {
				if bytes.Equal(old, form) {
					dup = true
					break
				}
			}
			if !dup {
				next = append(next, form)
			}
		}
	}
	// Longest first, so a value containing another is replaced whole.
	sort.SliceStable(next, func(i, j int) bool { return len(next[i]) > len(next[j]) })
	r.values.Store(&next)
}

// Known returns the known values (and their JSON-escaped forms).
func (r *Redactor) known() [][]byte {
	if r == nil {
		return nil
	}
	if p := r.values.Load(); p != nil {
		return *p
	}
	return nil
}

// ContainsKnown reports whether s holds one of the known values, as is or
// URL-escaped.
func (r *Redactor) ContainsKnown(s string) bool {
	b := []byte(s)
	for _, v := range r.known() {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return false
}

// Redact returns b with known values and secret shapes masked. It returns b
// itself (not a copy) when nothing matched.
func (r *Redactor) Redact(b []byte) []byte {
	return RedactShapes(r.RedactValues(b))
}

// RedactValues masks the known values only.
func (r *Redactor) RedactValues(b []byte) []byte {
	for _, v := range r.known() {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(Mask))
		}
	}
	return b
}

// String is Redact for a string.
func (r *Redactor) String(s string) string {
	out := r.Redact([]byte(s))
	if len(out) == len(s) && string(out) == s {
		return s
	}
	return string(out)
}

// ValuesString is RedactValues for a string.
func (r *Redactor) ValuesString(s string) string {
	out := r.RedactValues([]byte(s))
	if len(out) == len(s) && string(out) == s {
		return s
	}
	return string(out)
}

// jsonEscaped returns s as it appears inside a JSON string (no HTML
// escaping), without the quotes.
func jsonEscaped(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}

// prefixTriggers start every secret the prefix pattern matches; a text
// with none of them skips that regular expression.
var prefixTriggers = [][]byte{
	[]byte("AKIA"), []byte("ASIA"), []byte("AIDA"), []byte("AROA"), []byte("AGPA"), []byte("ANPA"), []byte("ANVA"), []byte("AIPA"),
	[]byte("ghp_"), []byte("gho_"), []byte("ghu_"), []byte("ghs_"), []byte("ghr_"), []byte("github_pat_"),
	[]byte("glpat-"), []byte("gldt-"), []byte("glrt-"), []byte("glptt-"), []byte("glcbt-"), []byte("glsoat-"), []byte("glft-"), []byte("xox"), []byte("xapp-"), []byte("hooks.slack.com"),
	[]byte("eyJ"), []byte("sk-"), []byte("sk_"), []byte("rk_"), []byte("whsec_"), []byte("AIza"), []byte("SG."),
}

// prefixPattern matches secrets told by a fixed prefix.
var prefixPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(
		`(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA)[A-Z0-9]{16}` + // AWS key ids
			`|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}` + // GitHub
			`|gl(?:pat|dt|rt|ptt|cbt|soat|ft)-[A-Za-z0-9_-]{20,}` + // GitLab
			`|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}` + // Slack
			`|hooks\.slack\.com/services/[A-Za-z0-9]+/[A-Za-z0-9]+/[A-Za-z0-9]+` +
			`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*` + // JWT
			`|sk-[A-Za-z0-9_-]{20,}` + // OpenAI, Anthropic, OpenRouter
			`|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{20,}` + // Stripe
			`|AIza[0-9A-Za-z_-]{30,}` + // Google
			`|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`) // SendGrid
})

// RedactShapes masks text with the shape of a well-known secret: private
// keys, prefixed tokens, passwords in URLs, bearer tokens and the values of
// assignments whose name says secret (api_key = …, "password": "…").
func RedactShapes(b []byte) []byte {
	pem, prefixed, url := scanTriggers(b)
	var spans []span
	if pem {
		spans = pemSpans(b, spans)
	}
	if prefixed {
		for _, m := range prefixPattern().FindAllIndex(b, -1) {
			if boundaryBefore(b, m[0]) {
				spans = append(spans, span{m[0], m[1]})
			}
		}
	}
	if url {
		spans = urlPasswordSpans(b, spans)
	}
	spans = wordSpans(b, spans)
	if len(spans) == 0 {
		return b
	}
	return maskSpans(b, spans)
}

// triggerTable marks the byte pairs that start a trigger: a prefix of
// prefixTriggers, "--" (a PEM line) or ":/" (a URL).
var triggerTable = func() *[1 << 16]uint8 {
	var t [1 << 16]uint8
	for _, p := range prefixTriggers {
		t[int(p[0])<<8|int(p[1])] |= 1
	}
	t['-'<<8|'-'] |= 2
	t[':'<<8|'/'] |= 4
	for _, w := range secretWords {
		for _, c0 := range []byte{w[0], w[0] - 0x20} {
			for _, c1 := range []byte{w[1], w[1] - 0x20} {
				t[int(c0)<<8|int(c1)] |= 8
			}
		}
	}
	return &t
}()

// scanTriggers tells in one pass which kinds of secret b may hold.
func scanTriggers(b []byte) (pem, prefixed, url bool) {
	t := triggerTable
	for i := 0; i+1 < len(b); i++ {
		f := t[int(b[i])<<8|int(b[i+1])]
		if f == 0 {
			continue
		}
		if f&1 != 0 && !prefixed {
			for _, p := range prefixTriggers {
				if bytes.HasPrefix(b[i:], p) {
					prefixed = true
					break
				}
			}
		}
		if f&2 != 0 && !pem && bytes.HasPrefix(b[i:], pemBegin) {
			pem = true
		}
		if f&4 != 0 && !url && bytes.HasPrefix(b[i:], []byte("://")) {
			url = true
		}
	}
	return pem, prefixed, url
}

// span is a half-open byte range to mask.
type span struct{ start, end int }

// maskSpans replaces the spans (in any order, possibly overlapping) with Mask.
func maskSpans(b []byte, spans []span) []byte {
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := make([]byte, 0, len(b))
	prev := 0
	for _, s := range spans {
		if s.end <= prev {
			continue
		}
		if s.start < prev {
			s.start = prev
		} else {
			out = append(out, b[prev:s.start]...)
			out = append(out, Mask...)
		}
		prev = s.end
	}
	return append(out, b[prev:]...)
}

func hasAny(b []byte, subs [][]byte) bool {
	for _, t := range subs {
		if bytes.Contains(b, t) {
			return true
		}
	}
	return false
}

// hasPrefixedShape reports whether v holds a prefixed secret.
func hasPrefixedShape(v []byte) bool {
	if !hasAny(v, prefixTriggers) {
		return false
	}
	for _, m := range prefixPattern().FindAllIndex(v, -1) {
		if boundaryBefore(v, m[0]) {
			return true
		}
	}
	return false
}

// urlPasswordSpans finds the password of scheme://user:password@host.
func urlPasswordSpans(b []byte, spans []span) []span {
	off := 0
	for {
		i := bytes.Index(b[off:], []byte("://"))
		if i < 0 {
			return spans
		}
		i += off
		off = i + 3
		if i == 0 || !isAlpha(b[i-1]) {
			continue
		}
		colon, at := -1, -1
		for j := off; j < len(b); j++ {
			c := b[j]
			if c == '@' {
				at = j
				break
			}
			if c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '\\' || c == '<' || c == '>' {
				break
			}
			if c == ':' && colon < 0 {
				colon = j
			}
		}
		if colon < 0 || at < 0 || at == colon+1 {
			continue
		}
		pw := b[colon+1 : at]
		if pw[0] == '$' || pw[0] == '<' || pw[0] == '{' || pw[0] == '%' || bytes.EqualFold(pw, []byte("password")) || isRepeat(pw) {
			continue
		}
		spans = append(spans, span{colon + 1, at})
		off = at
	}
}

// secretWords are what a secret's name contains (matched without case).
var secretWords = []string{
	"apikey", "api_key", "api-key", "secret", "token", "password", "passwd", "pwd",
	"private_key", "private-key", "privatekey", "access_key", "access-key", "accesskey",
	"credential", "bearer",
}

// wordSpans finds the values of assignments whose name holds a secret word
// (api_key = "…", PASSWORD: …, "client_secret": "…", aws_secret_access_key …)
// and bearer tokens.
func wordSpans(b []byte, spans []span) []span {
	t := triggerTable
	for i := 0; i+1 < len(b); i++ {
		if t[int(b[i])<<8|int(b[i+1])]&8 == 0 {
			continue
		}
		w := matchWord(b[i:])
		if w == "" {
			continue
		}
		// The whole name around the word.
		start := i
		for start > 0 && isNameChar(b[start-1]) {
			start--
		}
		end := i + len(w)
		for end < len(b) && isNameChar(b[end]) {
			end++
		}
		name := b[start:end]
		j := end
		if w == "bearer" {
			if len(name) != len("bearer") {
				i = end - 1
				continue
			}
			j = skip(b, j, " \t")
			if j == end {
				i = end - 1
				continue
			}
		} else {
			j = skipQuote(b, j)
			k := skip(b, j, " \t")
			switch {
			case k < len(b) && (b[k] == ':' || b[k] == '='):
				j = skip(b, k+1, "=")
				j = skip(b, j, " \t")
			case k > j && awsSecretName(name):
				j = k // aws configure set aws_secret_access_key VALUE
			default:
				i = end - 1
				continue
			}
			j = skipQuote(b, j)
		}
		v := j
		for v < len(b) && isValueChar(b[v]) {
			v++
		}
		if val := b[j:v]; len(val) >= minValue && (valueLooksSecret(val) || hasPrefixedShape(val)) {
			spans = append(spans, span{j, v})
		}
		i = max(end, v) - 1
	}
	return spans
}

// wordsByLetter indexes secretWords by their first letter.
var wordsByLetter = func() (t [26][]string) {
	for _, w := range secretWords {
		t[w[0]-'a'] = append(t[w[0]-'a'], w)
	}
	return t
}()

// matchWord returns the secret word b starts with, ignoring case, or "".
func matchWord(b []byte) string {
	c := b[0] | 0x20
	if c < 'a' || c > 'z' {
		return ""
	}
	for _, w := range wordsByLetter[c-'a'] {
		if len(b) < len(w) {
			continue
		}
		ok := true
		for k := 1; k < len(w); k++ {
			if x := b[k]; x != w[k] && x|0x20 != w[k] {
				ok = false
				break
			}
		}
		if ok {
			return w
		}
	}
	return ""
}

func awsSecretName(name []byte) bool {
	n := bytes.ToLower(name)
	return bytes.Contains(n, []byte("secret_access_key")) || bytes.Contains(n, []byte("secretaccesskey"))
}

func skip(b []byte, i int, set string) int {
	for i < len(b) && bytes.IndexByte([]byte(set), b[i]) >= 0 {
		i++
	}
	return i
}

// skipQuote skips a quote, JSON-escaped any number of times (\", \\\").
func skipQuote(b []byte, i int) int {
	j := i
	for j < len(b) && b[j] == '\\' {
		j++
	}
	if j < len(b) && (b[j] == '"' || b[j] == '\'') {
		return j + 1
	}
	return i
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isNameChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func isValueChar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '\\', ',', ';', '{', '}', '(', ')', '[', ']', '<', '>':
		return false
	}
	return c >= 0x20
}

func isRepeat(v []byte) bool {
	for _, c := range v {
		if c != v[0] {
			return false
		}
	}
	return true
}

// HasShape reports whether s holds text with a secret's shape.
func HasShape(s string) bool {
	b := []byte(s)
	out := RedactShapes(b)
	return len(out) != len(b) || !bytes.Equal(out, b)
}

// boundaryBefore keeps "task-…" or "disk-…" from looking like "sk-…": a
// prefix-shaped secret must not continue a word. A JSON escape (\n) before
// it counts as a boundary.
func boundaryBefore(b []byte, i int) bool {
	if i == 0 {
		return true
	}
	c := b[i-1]
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
		return i >= 2 && b[i-2] == '\\'
	}
	return true
}

// valueLooksSecret judges the value of an assignment or a URL's password:
// placeholders (${VAR}, <your-key>, xxx…, ***), words and numbers are not
// secrets; anything with both letters and digits, or with symbols, is.
func valueLooksSecret(v []byte) bool {
	if len(v) == 0 || v[0] == '$' || v[0] == '%' || v[0] == '<' || v[0] == '{' || v[0] == '*' {
		return false
	}
	var letters, digits, other int
	same := true
	for i, c := range v {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		case c >= '0' && c <= '9':
			digits++
		default:
			other++
		}
		if i > 0 && c != v[0] {
			same = false
		}
	}
	if same || bytes.Equal(bytes.ToLower(v), []byte("password")) {
		return false
	}
	if letters > 0 && digits > 0 {
		return true
	}
	// Symbols among letters (p@ss^word!) make a password, not an identifier
	// or a path.
	return letters > 0 && other > 0 && !bytes.ContainsAny(v, "./") && !allIdent(v)
}

func allIdent(v []byte) bool {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
	pemDash  = []byte("-----")
)

// pemSpans finds PEM private key blocks, from BEGIN to END (or, cut short,
// to the end of the base64 body), raw or with JSON-escaped newlines.
func pemSpans(b []byte, spans []span) []span {
	off := 0
	for {
		i := bytes.Index(b[off:], pemBegin)
		if i < 0 {
			return spans
		}
		start := off + i
		hdrEnd := bytes.Index(b[start+len(pemBegin):], pemDash)
		if hdrEnd < 0 {
			return spans
		}
		label := b[start+len(pemBegin) : start+len(pemBegin)+hdrEnd]
		off = start + len(pemBegin) + hdrEnd + len(pemDash)
		if !bytes.HasSuffix(label, []byte("PRIVATE KEY")) || len(label) > 40 {
			continue
		}
		end := off + pemBodyLen(b[off:])
		if j := bytes.Index(b[off:], pemEnd); j >= 0 && off+j <= end {
			if k := bytes.Index(b[off+j+len(pemEnd):], pemDash); k >= 0 {
				end = off + j + len(pemEnd) + k + len(pemDash)
			}
		}
		spans = append(spans, span{start, end})
		off = end
	}
}

// pemBodyLen is how far a PEM body without its END line runs: base64,
// whitespace, escaped newlines and header lines.
func pemBodyLen(b []byte) int {
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '+' || c == '/' || c == '=' || c == '\\' || c == '\n' || c == '\r' || c == ' ' ||
			c == ':' || c == ',' || c == '-') {
			if i > 0 && b[i-1] == '\\' {
				i-- // leave an escape whole: \" ends a JSON string
			}
			return i
		}
	}
	return len(b)
}
