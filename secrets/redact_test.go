package secrets

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusCase is one line of testdata/secrets.jsonl or nonsecrets.jsonl, a
// blind corpus written from the issue by someone who never read this code.
type corpusCase struct {
	ID, Shape, Value, Context, Note string
}

func loadCorpus(t testing.TB, name string) []corpusCase {
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c corpusCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "corpus line")
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

// jsonForm is s as it sits inside a JSON string (a session line, a --json
// event).
func jsonForm(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// leaks reports whether out still holds any telling part of value: the value
// itself, its JSON form, or (for multi-line values) any of its lines of 16
// bytes or more.
func leaks(out, value string) bool {
	if strings.Contains(out, value) || strings.Contains(out, jsonForm(value)) {
		return true
	}
	for _, line := range strings.Split(value, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(out, line) {
			return true
		}
	}
	return false
}

func TestRedactCorpusSecrets(t *testing.T) {
	r := NewRedactor()
	missed := 0
	cases := loadCorpus(t, "secrets.jsonl")
	for _, c := range cases {
		for form, in := range map[string]string{"raw": c.Context, "json": jsonForm(c.Context), "json-of-json": jsonForm(jsonForm(c.Context))} {
			out := r.String(in)
			if leaks(out, c.Value) {
				missed++
				t.Errorf("%s (%s, %s): not masked: %q", c.ID, c.Shape, form, out)
			}
		}
	}
	t.Logf("secrets corpus: %d cases, %d misses over raw, JSON and doubly-escaped forms", len(cases), missed)
}

func TestRedactCorpusNonSecrets(t *testing.T) {
	r := NewRedactor()
	var false_ []string
	cases := loadCorpus(t, "nonsecrets.jsonl")
	for _, c := range cases {
		if out := r.String(c.Context); out != c.Context {
			false_ = append(false_, c.ID+" ("+c.Note+"): "+out)
		}
	}
	t.Logf("non-secrets corpus: %d of %d redacted falsely", len(false_), len(cases))
	for _, f := range false_ {
		t.Log("  " + f)
	}
	// The blind corpus is the measure; a regression past today's count fails.
	assert.LessOrEqual(t, len(false_), maxFalseRedactions, "false redactions of the non-secrets corpus")
}

// maxFalseRedactions is the count measured when the corpus was added.
const maxFalseRedactions = 0

func TestRedactKnownValues(t *testing.T) {
	r := NewRedactor("short", "hunter2-longer", `quo"te-value`)
	assert.Equal(t, "pw=[REDACTED] and short", r.String("pw=hunter2-longer and short"), "a known value anywhere; short values are ignored")
	assert.Equal(t, `{"a":"[REDACTED]"}`, r.String(`{"a":"quo\"te-value"}`), "the JSON-escaped form too")
	assert.True(t, r.ContainsKnown("http://x/?k=hunter2-longer"))
	assert.False(t, r.ContainsKnown("http://x/"))
	r.Add("added-later-1234")
	assert.Equal(t, "[REDACTED]", r.String("added-later-1234"))
	var none *Redactor
	assert.Equal(t, "key [REDACTED]", none.String("key AKIAABCDEFGHIJKLMNOP"), "a nil redactor masks shapes")
}

func TestRedactKeepsOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"task-1234567890abcdefghijklmnop", "disk-abcdefghijklmnopqrstuvwxyz",
		`{"input_tokens":1234,"output_tokens":56}`, "max_tokens = 4096",
		"the token: is passed as the second argument", "password: ${DB_PASSWORD}",
		"func TestTokenRefresh(t *testing.T) {", "secret_env = [\"MY_SERVICE_TOKEN\"]",
	} {
		assert.Equal(t, s, NewRedactor().String(s), "ordinary text stays")
	}
}

func TestHasShape(t *testing.T) {
	assert.True(t, HasShape("AKIAABCDEFGHIJKLMNOP"))
	assert.True(t, HasShape("postgres://app:s3cretpw@db/prod"))
	assert.False(t, HasShape("/usr/local/bin:/usr/bin"))
	assert.False(t, HasShape("en_US.UTF-8"))
}

func BenchmarkRedact(b *testing.B) {
	r := NewRedactor("sk-known-value-123456", "another-secret-value")
	plain := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog; go test ./... passes.\n", 16)) // ~1 KiB
	var mixed []byte
	for _, c := range loadCorpus(b, "secrets.jsonl") {
		mixed = append(mixed, c.Context...)
		mixed = append(mixed, '\n')
	}
	for _, bc := range []struct {
		name string
		in   []byte
	}{{"chunk-40B", plain[:40]}, {"plain-1KiB", plain}, {"secrets-corpus", mixed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				r.Redact(bc.in)
			}
		})
	}
}
