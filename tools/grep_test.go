package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGrepLinesInPathOrder(t *testing.T) {
	h := newFileHarness(t)
	h.write("b.go", "func B() {}\nvar x = 1\n")
	h.write("a/z.go", "func Z() {}\n")
	h.write("a.go", "// nothing\nfunc A() {}\r\n")
	res := h.ok("grep", map[string]string{"pattern": `^func \w+\(`})
	assert.Equal(t, "a/z.go:1:func Z() {}\na.go:2:func A() {}\nb.go:1:func B() {}\n", res.Content)
	assert.Equal(t, "grep ^func \\w+\\(: 3 matches in 3 files", res.Note)

	res = h.ok("grep", map[string]string{"pattern": `^func \w+\(`, "path": "b.go"})
	assert.Equal(t, "b.go:1:func B() {}\n", res.Content, "a single file")
	res = h.ok("grep", map[string]any{"pattern": `func`, "files_only": true})
	assert.Equal(t, "a/z.go\na.go\nb.go\n", res.Content)
	assert.Contains(t, h.ok("grep", map[string]string{"pattern": "nothing here"}).Content, "No matches")
}

func TestGrepHonoursGitignoreAndSkipsBinaries(t *testing.T) {
	h := newFileHarness(t)
	ignoreTree(h)
	h.write("blob.bin", "needle\x00\x01")
	res := h.ok("grep", map[string]any{"pattern": "needle", "files_only": true})
	assert.Equal(t, "a.go\nkeep.log\nsub/c.go\nsub/deep/d.go\nsub/deep/only-here.go\n", res.Content)
	res = h.ok("grep", map[string]any{"pattern": "needle", "files_only": true, "path": "build"})
	assert.Equal(t, "build/x.go\n", res.Content, "an ignored directory named explicitly is searched")
}

func TestGrepOptions(t *testing.T) {
	h := newFileHarness(t)
	h.write("x.go", "Hello\nhello\nHELLO\n")
	h.write("x.txt", "hello\n")
	h.write("web/app.tsx", "hello\n")

	res := h.ok("grep", map[string]any{"pattern": "hello", "case_insensitive": true, "include": "*.go"})
	assert.Equal(t, "x.go:1:Hello\nx.go:2:hello\nx.go:3:HELLO\n", res.Content)
	res = h.ok("grep", map[string]any{"pattern": "hello", "include": "**/*.{ts,tsx}"})
	assert.Equal(t, "web/app.tsx:1:hello\n", res.Content)
	res = h.ok("grep", map[string]any{"pattern": "(?i)HeLLo$", "include": "*.txt"})
	assert.Equal(t, "x.txt:1:hello\n", res.Content)

	assert.Contains(t, h.fails("grep", map[string]string{"pattern": "a("}), "invalid regular expression")
	assert.Contains(t, h.fails("grep", map[string]string{"pattern": ""}), "pattern is empty")
	assert.Contains(t, h.fails("grep", map[string]string{"pattern": "a", "include": "[x"}), "invalid glob")
	assert.Contains(t, h.fails("grep", map[string]any{"pattern": "a", "context": -1}), "context")
}

func TestGrepContextLines(t *testing.T) {
	h := newFileHarness(t)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		if i == 5 || i == 7 || i == 16 {
			fmt.Fprintf(&b, "match %d\n", i)
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	h.write("f.txt", b.String())
	h.write("g.txt", "match g\nline 2\n")
	res := h.ok("grep", map[string]any{"pattern": "match", "context": 2})
	assert.Equal(t, ""+
		"f.txt-3-line 3\nf.txt-4-line 4\nf.txt:5:match 5\nf.txt-6-line 6\nf.txt:7:match 7\nf.txt-8-line 8\nf.txt-9-line 9\n"+
		"--\n"+
		"f.txt-14-line 14\nf.txt-15-line 15\nf.txt:16:match 16\nf.txt-17-line 17\nf.txt-18-line 18\n"+
		"--\n"+
		"g.txt:1:match g\ng.txt-2-line 2\n", res.Content)
}

func TestGrepCaps(t *testing.T) {
	h := newFileHarness(t)
	for i := range 30 {
		h.write(fmt.Sprintf("f%02d.txt", i), strings.Repeat("hit\n", 10))
	}
	res := h.ok("grep", map[string]string{"pattern": "hit"})
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	require.Len(t, lines, grepMaxLines+1)
	assert.Equal(t, "f00.txt:1:hit", lines[0])
	assert.Equal(t, "f19.txt:10:hit", lines[grepMaxLines-1], "the first 200 in path order")
	assert.Contains(t, lines[grepMaxLines], "output capped")
	assert.Contains(t, res.Note, "(capped)")

	h.write("wide/w.txt", strings.Repeat("hit "+strings.Repeat("x", 390)+"\n", 190))
	res = h.ok("grep", map[string]string{"pattern": "hit", "path": "wide"})
	assert.LessOrEqual(t, len(res.Content), grepMaxBytes+1024)
	assert.Contains(t, res.Content, "output capped")

	h.write("long/l.txt", "hit"+strings.Repeat("é", 1000)+"\n")
	res = h.ok("grep", map[string]string{"pattern": "hit", "path": "long"})
	assert.Contains(t, res.Content, "[line cut]")
	assert.Less(t, len(res.Content), 600)
}

// TestGrepMatchesLikeNaiveSearch compares the literal-prefiltered search with
// running the regex on every line, over random text and patterns.
func TestGrepMatchesLikeNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"foo", "bar", "Reader", "func", " ", "\n", "\r\n", "(", "x1", "\t"}
	patterns := []string{`foo`, `func \w+Reader\(`, `^bar`, `foo$`, `b.r\s+x1`, `x1+`, `(foo|bar)x`, `Reader\(`, `o*`, `\bbar\b`, `ar(\s)fo`, `(?i)READER`}
	for round := range 200 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		data := []byte(b.String())
		for _, p := range patterns {
			q, err := compileGrep(grepArgs{Pattern: p})
			require.NoError(t, err)
			var got []int
			q.eachMatch(data, func(ls, le, no int) bool { got = append(got, no); return true })
			var want []int
			re := regexp.MustCompile("(?m)" + p)
			for i, line := range bytes.Split(data, []byte("\n")) {
				if i == bytes.Count(data, []byte("\n")) && len(line) == 0 {
					break
				}
				if re.Match(line) {
					want = append(want, i+1)
				}
			}
			require.Equal(t, want, got, "round %d pattern %q data %q", round, p, data)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	for p, want := range map[string]string{
		`func \w+Reader\(`: "Reader(",
		`foo`:              "foo",
		`(?i)foo`:          "",
		`foo|bar`:          "",
		`(abc)+x`:          "abc",
		`a?bc`:             "bc",
		`x{2,}yz`:          "yz",
	} {
		q, err := compileGrep(grepArgs{Pattern: p})
		require.NoError(t, err)
		assert.Equal(t, want, string(q.lit), p)
	}
}

// BenchmarkGrep searches Go's own source tree. Compare with
// `grep -rEc 'func [[:alnum:]_]+Reader\(' $(go env GOROOT)/src`.
func BenchmarkGrep(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src")
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		src = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	if _, err := os.Stat(src); err != nil {
		b.Skipf("no Go source tree: %v", err)
	}
	ws, err := NewWorkspace(src)
	require.NoError(b, err)
	tl := newGrepTool(ws)
	args := json.RawMessage(`{"pattern":"func \\w+Reader\\("}`)
	b.ResetTimer()
	for b.Loop() {
		res, err := tl.Run(context.Background(), args)
		if err != nil || res.IsError || !strings.Contains(res.Content, "bufio") {
			b.Fatalf("grep failed: %v %s", err, res.Content)
		}
	}
}

// TestGrepNamesFilesTooLargeToSearch: a file over 64 MiB is not searched,
// and the result says so instead of a bare "No matches".
func TestGrepNamesFilesTooLargeToSearch(t *testing.T) {
	h := newFileHarness(t)
	h.write("small.log", "needle\n")
	big, err := os.Create(h.path("big.log"))
	require.NoError(t, err)
	_, err = big.WriteString("needle\n")
	require.NoError(t, err)
	require.NoError(t, big.Truncate(grepMaxFileSize+1), "a sparse file, no disk used")
	require.NoError(t, big.Close())

	res := h.ok("grep", map[string]string{"pattern": "needle"})
	assert.Equal(t, "small.log:1:needle\n(not searched: 1 file over 64 MiB: big.log; search them with bash, e.g. rg or grep)\n", res.Content)
	res = h.ok("grep", map[string]string{"pattern": "nowhere"})
	assert.Equal(t, "No matches for nowhere in ..\n(not searched: 1 file over 64 MiB: big.log; search them with bash, e.g. rg or grep)", res.Content)
}
