package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadNumbersLines(t *testing.T) {
	h := newFileHarness(t)
	h.write("main.go", "package main\n\nfunc main() {}\n")
	res := h.ok("read", map[string]string{"path": "main.go"})
	assert.Equal(t, "    1\tpackage main\n    2\t\n    3\tfunc main() {}\n", res.Content)
	assert.Equal(t, "read main.go 1-3", res.Note)
}

func TestReadOffsetAndLimit(t *testing.T) {
	h := newFileHarness(t)
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	h.write("f.txt", b.String())
	res := h.ok("read", map[string]any{"path": "f.txt", "offset": 4, "limit": 2})
	assert.Equal(t, "    4\tline 4\n    5\tline 5\n(lines 4-5 of 10 shown; read with offset=6 to continue)\n", res.Content)
	assert.Equal(t, "read f.txt 4-5 of 10", res.Note)

	res = h.ok("read", map[string]any{"path": "f.txt", "offset": 9})
	assert.Equal(t, "    9\tline 9\n   10\tline 10\n", res.Content)

	msg := h.fails("read", map[string]any{"path": "f.txt", "offset": 11})
	assert.Contains(t, msg, "past the end")
	assert.Contains(t, msg, "10 lines")
	assert.Contains(t, h.fails("read", map[string]any{"path": "f.txt", "limit": -1}), "positive")
}

func TestReadHugeFilePages(t *testing.T) {
	h := newFileHarness(t)
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "row %d\n", i)
	}
	b.WriteString("no newline at end")
	h.write("big.txt", b.String())

	res := h.ok("read", map[string]string{"path": "big.txt"})
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	require.Len(t, lines, readDefaultLimit+1)
	assert.Equal(t, " 2000\trow 2000", lines[1999])
	assert.Equal(t, "(lines 1-2000 of 5001 shown; read with offset=2001 to continue)", lines[2000])

	res = h.ok("read", map[string]any{"path": "big.txt", "offset": 5000})
	assert.Equal(t, " 5000\trow 5000\n 5001\tno newline at end\n", res.Content)
}

func TestReadByteCapPages(t *testing.T) {
	h := newFileHarness(t)
	line := strings.Repeat("x", 1000) + "\n"
	h.write("wide.txt", strings.Repeat(line, 500))
	res := h.ok("read", map[string]string{"path": "wide.txt"})
	assert.LessOrEqual(t, len(res.Content), readMaxBytes+2*len(line))
	assert.Contains(t, res.Content, "of 500 shown; read with offset=")
}

func TestReadCutsLongLines(t *testing.T) {
	h := newFileHarness(t)
	long := strings.Repeat("é", 5000) // two bytes each: the cut counts characters
	h.write("min.js", "short\n"+long+"\nafter\n")
	res := h.ok("read", map[string]string{"path": "min.js"})
	lines := strings.Split(res.Content, "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, "    2\t"+strings.Repeat("é", readMaxLineChars)+" [... line cut at 2000 chars; it has 10001 bytes]", lines[1])
	assert.Equal(t, "    3\tafter", lines[2])
}

func TestReadLineEndingsAndBOM(t *testing.T) {
	h := newFileHarness(t)
	h.write("crlf.txt", "a\r\nb\r\n")
	h.write("bom.txt", "\ufeffa\nb")
	h.write("both.txt", "\ufeffa\r\nb\r\n")
	h.write("uni.txt", "日本語\n🙂 ok\n")
	for _, name := range []string{"crlf.txt", "bom.txt", "both.txt"} {
		assert.Equal(t, "    1\ta\n    2\tb\n", h.ok("read", map[string]string{"path": name}).Content, name)
	}
	assert.Equal(t, "    1\t日本語\n    2\t🙂 ok\n", h.ok("read", map[string]string{"path": "uni.txt"}).Content)
}

func TestReadEmptyBinaryAndMissing(t *testing.T) {
	h := newFileHarness(t)
	h.write("empty.txt", "")
	res := h.ok("read", map[string]string{"path": "empty.txt"})
	assert.Contains(t, res.Content, "empty")

	h.write("img.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	assert.Contains(t, h.fails("read", map[string]string{"path": "img.png"}), "binary")

	assert.Contains(t, h.fails("read", map[string]string{"path": "nope.txt"}), "does not exist")
	h.write("dir/x", "")
	assert.Contains(t, h.fails("read", map[string]string{"path": "dir"}), "directory")
}

func TestReadMarksEmptyFileAsRead(t *testing.T) {
	h := newFileHarness(t)
	h.write("empty.txt", "")
	h.ok("read", map[string]string{"path": "empty.txt"})
	h.ok("write", map[string]string{"path": "empty.txt", "content": "now full\n"})
	assert.Equal(t, "now full\n", h.content("empty.txt"))
}
