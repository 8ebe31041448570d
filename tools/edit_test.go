package tools

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// edited reads rel, runs one edit and returns the result.
func (h *fileHarness) edit(rel, old, new string, all bool) Result {
	h.t.Helper()
	h.ok("read", map[string]string{"path": rel})
	return h.call("edit", map[string]any{"path": rel, "old_string": old, "new_string": new, "replace_all": all})
}

func TestEditExact(t *testing.T) {
	h := newFileHarness(t)
	h.write("main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	res := h.edit("main.go", `println("hi")`, "println(\"hello\")\n\tprintln(\"world\")", false)
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"world\")\n}\n", h.content("main.go"))
	assert.Equal(t, "edited main.go (+2 -1)", res.Note)
	assert.Equal(t, "Edited main.go: 1 replacement.\n"+
		"--- a/main.go\n+++ b/main.go\n"+
		"@@ -1,5 +1,6 @@\n package main\n \n func main() {\n-\tprintln(\"hi\")\n+\tprintln(\"hello\")\n+\tprintln(\"world\")\n }\n",
		res.Content)
}

func TestEditKeepsLineEndingsAndBOM(t *testing.T) {
	cases := []struct{ name, before, old, new, after string }{
		{"crlf", "a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\nz\n", "x\r\ny\r\nz\r\nc\r\n"},
		{"crlf old_string", "a\r\nb\r\nc\r\n", "b\r\nc", "B\r\nC", "a\r\nB\r\nC\r\n"},
		{"bom", "\ufeffa\nb\n", "a\nb", "c", "\ufeffc\n"},
		{"bom in old_string", "\ufeffa\nb\n", "\ufeffa", "c", "\ufeffc\nb\n"},
		{"bom+crlf", "\ufeffone\r\ntwo\r\n", "one\ntwo", "1\n2", "\ufeff1\r\n2\r\n"},
		{"mixed keeps untouched endings", "a\r\nb\nc\r\nd\r\n", "c", "C1\nC2", "a\r\nb\nC1\r\nC2\r\nd\r\n"},
		{"mixed mostly lf", "a\r\nb\nc\nd\n", "c", "C1\nC2", "a\r\nb\nC1\nC2\nd\n"},
		{"unicode", "naïve 日本 🙂\n", "日本 🙂", "中文 😀", "naïve 中文 😀\n"},
		{"no final newline", "x\ny", "y", "z", "x\nz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newFileHarness(t)
			h.write("f.txt", c.before)
			res := h.edit("f.txt", c.old, c.new, false)
			require.False(t, res.IsError, res.Content)
			assert.Equal(t, c.after, h.content("f.txt"))
			assert.NotContains(t, res.Content, "\r", "the diff shows normalised lines")
		})
	}
}

func TestEditZeroAndSeveralMatches(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.go", "x := 1\ny := 2\nx := 1\n")
	res := h.edit("f.go", "x := 1", "x := 3", false)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "matches 2 places (lines 1, 3)")
	assert.Contains(t, res.Content, "replace_all")

	res = h.edit("f.go", "z := 9", "z := 3", false)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "not found")
	res = h.edit("f.go", "y := 2\nw := 5", "", false)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "first line appears at line 2", "the hint points near the mismatch")
	assert.Equal(t, "x := 1\ny := 2\nx := 1\n", h.content("f.go"))

	res = h.edit("f.go", "x := 1", "x := 3", true)
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "2 replacements")
	assert.Equal(t, "x := 3\ny := 2\nx := 3\n", h.content("f.go"))
}

func TestEditRefusesNoOps(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.txt", "a\n")
	assert.Contains(t, h.edit("f.txt", "a", "a", false).Content, "the same")
	assert.Contains(t, h.edit("f.txt", "", "b", false).Content, "old_string is empty")
	h.write("bin", "a\x00b")
	assert.Contains(t, h.fails("edit", map[string]any{"path": "bin", "old_string": "a", "new_string": "b"}), "binary")
}

func TestEditCreatesFileWithEmptyOldString(t *testing.T) {
	h := newFileHarness(t)
	res := h.ok("edit", map[string]any{"path": "new/dir/f.txt", "old_string": "", "new_string": "hello\n"})
	assert.Contains(t, res.Content, "Created new/dir/f.txt")
	assert.Equal(t, "hello\n", h.content("new/dir/f.txt"))
	assert.Contains(t, h.fails("edit", map[string]any{"path": "missing.txt", "old_string": "a", "new_string": "b"}), "does not exist")
}

func TestEditWhitespaceFallback(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.py", "def f():\n    if x:   \n        return 1\n    return 2\n")

	// Trailing blanks differ: matched ignoring them, unique.
	res := h.edit("f.py", "    if x:\n        return 1\n", "    if y:\n        return 3\n", false)
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "ignoring trailing whitespace")
	assert.Equal(t, "def f():\n    if y:\n        return 3\n    return 2\n", h.content("f.py"))

	// Indentation differs: the replacement takes the file's indentation.
	res = h.edit("f.py", "if y:\n    return 3", "if z:\n    return 4\n    # done", false)
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "ignoring indentation")
	assert.Equal(t, "def f():\n    if z:\n        return 4\n        # done\n    return 2\n", h.content("f.py"))
}

// A line of the replacement shallower than its first line (the closing
// brace) keeps the file's depth for it instead of taking the first line's.
func TestEditIndentFallbackLeavesShallowerLines(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.go", "func f() {\n\tx := 1\n}\n")
	res := h.edit("f.go", "    x := 1\n}", "    x := 2\n}", false)
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "ignoring indentation")
	assert.Equal(t, "func f() {\n\tx := 2\n}\n", h.content("f.go"))

	// A deeper line keeps its extra depth past the file's indentation.
	res = h.edit("f.go", "    x := 2\n}", "    if x := 2; x > 1 {\n        return\n    }\n}", false)
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "func f() {\n\tif x := 2; x > 1 {\n\t    return\n\t}\n}\n", h.content("f.go"))
}

func TestEditWhitespaceFallbackAmbiguous(t *testing.T) {
	h := newFileHarness(t)
	before := "a:\n  x = 1\nb:\n    x = 1\n"
	h.write("f.yaml", before)
	res := h.edit("f.yaml", "x = 1 ", "x = 2", false)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "ignoring indentation it matches 2 places (lines 2, 4)")
	assert.Equal(t, before, h.content("f.yaml"))
}

func TestMultiEdit(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.txt", "alpha\r\nbeta\r\ngamma\r\n")
	h.ok("read", map[string]string{"path": "f.txt"})
	res := h.ok("multi_edit", map[string]any{"path": "f.txt", "edits": []map[string]any{
		{"old_string": "alpha", "new_string": "ALPHA"},
		{"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA"}, // sees the first edit
		{"old_string": "a", "new_string": "4", "replace_all": true},
	}})
	assert.Equal(t, "ALPHA\r\nBETA\r\ng4mm4\r\n", h.content("f.txt"))
	assert.Equal(t, "edited f.txt (+3 -3)", res.Note)
	assert.Contains(t, res.Content, "4 replacements")
}

func TestMultiEditRollsBack(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.txt", "one\ntwo\nthree\n")
	h.ok("read", map[string]string{"path": "f.txt"})
	msg := h.fails("multi_edit", map[string]any{"path": "f.txt", "edits": []map[string]any{
		{"old_string": "one", "new_string": "1"},
		{"old_string": "four", "new_string": "4"},
		{"old_string": "three", "new_string": "3"},
	}})
	assert.Contains(t, msg, "edit 2 of 3 failed")
	assert.Contains(t, msg, "No edit was applied")
	assert.Equal(t, "one\ntwo\nthree\n", h.content("f.txt"))
	assert.Contains(t, h.fails("multi_edit", map[string]any{"path": "f.txt", "edits": []any{}}), "edits is empty")

	// The failed call did not spoil the read record.
	h.ok("multi_edit", map[string]any{"path": "f.txt", "edits": []map[string]any{{"old_string": "one", "new_string": "1"}}})
	assert.Equal(t, "1\ntwo\nthree\n", h.content("f.txt"))
}

func TestEditKeepsPermissions(t *testing.T) {
	h := newFileHarness(t)
	h.write("run.sh", "echo a\n")
	require.NoError(t, os.Chmod(h.path("run.sh"), 0o750))
	res := h.edit("run.sh", "echo a", "echo b", false)
	require.False(t, res.IsError, res.Content)
	fi, err := os.Stat(h.path("run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	entries, err := os.ReadDir(h.root)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

func TestApplyEditMapsOffsets(t *testing.T) {
	// Many CRLF lines before and inside the match: the splice must land on
	// the original bytes exactly.
	var b strings.Builder
	for range 100 {
		b.WriteString("line\r\n")
	}
	b.WriteString("target one\r\ntarget two\r\ntail\n")
	r, err := applyEdit(b.String(), editOp{OldString: "target one\ntarget two\n", NewString: "done\n"})
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("line\r\n", 100)+"done\r\ntail\n", r.text)
}
