package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileHarness runs the file tools over a temporary workspace.
type fileHarness struct {
	t       *testing.T
	ws      *Workspace
	root    string
	outside string
	reg     *Registry
}

func newFileHarness(t *testing.T) *fileHarness {
	ws, root, outside := newTestWorkspace(t)
	return &fileHarness{t: t, ws: ws, root: root, outside: outside, reg: NewRegistry(FileTools(ws)...)}
}

// call runs tool with args (a JSON string or a value to marshal).
func (h *fileHarness) call(tool string, args any) Result {
	h.t.Helper()
	tl, ok := h.reg.Get(tool)
	require.True(h.t, ok, "tool %s", tool)
	raw, isString := args.(string)
	if !isString {
		b, err := json.Marshal(args)
		require.NoError(h.t, err)
		raw = string(b)
	}
	res, err := tl.Run(context.Background(), json.RawMessage(raw))
	require.NoError(h.t, err, "%s %s", tool, raw)
	return res
}

// ok runs a call that must succeed.
func (h *fileHarness) ok(tool string, args any) Result {
	h.t.Helper()
	res := h.call(tool, args)
	require.False(h.t, res.IsError, "%s failed: %s", tool, res.Content)
	return res
}

// fails runs a call that must fail and returns its message.
func (h *fileHarness) fails(tool string, args any) string {
	h.t.Helper()
	res := h.call(tool, args)
	require.True(h.t, res.IsError, "%s should fail, got: %s", tool, res.Content)
	assert.NotEmpty(h.t, res.Note, "an error result has a note")
	return res.Content
}

func (h *fileHarness) path(rel string) string { return filepath.Join(h.root, rel) }

func (h *fileHarness) write(rel, content string) { writeFile(h.t, h.path(rel), content) }

func (h *fileHarness) content(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.path(rel))
	require.NoError(h.t, err)
	return string(b)
}

// touchLater rewrites a file with new content and a later modification
// time, as another program editing it would.
func (h *fileHarness) touchLater(rel, content string) {
	h.t.Helper()
	h.write(rel, content)
	later := time.Now().Add(2 * time.Second)
	require.NoError(h.t, os.Chtimes(h.path(rel), later, later))
}

func TestFileToolsSet(t *testing.T) {
	h := newFileHarness(t)
	var names []string
	for _, s := range h.reg.Specs() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"read", "write", "edit", "multi_edit", "glob", "grep"}, names)
	var ro []string
	for _, s := range h.reg.ReadOnly().Specs() {
		ro = append(ro, s.Name)
	}
	assert.Equal(t, []string{"read", "glob", "grep"}, ro)
}

// TestFileToolSpecsAreSmall keeps the six schemas well inside the budget of
// the first request (under 5,000 bytes with at least eight tools and the
// system prompt).
func TestFileToolSpecsAreSmall(t *testing.T) {
	h := newFileHarness(t)
	total := 0
	for _, s := range h.reg.Specs() {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(s.Description), 350, "%s description", s.Name)
		assert.True(t, json.Valid(s.Schema), "%s schema is JSON", s.Name)
		total += len(b)
	}
	assert.LessOrEqual(t, total, 2600, "file tool specs in bytes")
}

func TestReadBeforeWriteGuard(t *testing.T) {
	h := newFileHarness(t)
	h.write("a.txt", "one\n")

	msg := h.fails("write", map[string]string{"path": "a.txt", "content": "two\n"})
	assert.Contains(t, msg, "read it first")
	msg = h.fails("edit", map[string]string{"path": "a.txt", "old_string": "one", "new_string": "two"})
	assert.Contains(t, msg, "read it first")
	assert.Equal(t, "one\n", h.content("a.txt"), "refused calls change nothing")

	h.ok("read", map[string]string{"path": "a.txt"})
	h.touchLater("a.txt", "changed\n")
	msg = h.fails("edit", map[string]string{"path": "a.txt", "old_string": "changed", "new_string": "two"})
	assert.Contains(t, msg, "changed on disk")
	msg = h.fails("write", map[string]string{"path": "a.txt", "content": "two\n"})
	assert.Contains(t, msg, "changed on disk")

	h.ok("read", map[string]string{"path": "a.txt"})
	h.ok("edit", map[string]string{"path": "a.txt", "old_string": "changed", "new_string": "two"})
	h.ok("edit", map[string]string{"path": "a.txt", "old_string": "two", "new_string": "three"})
	h.ok("write", map[string]string{"path": "a.txt", "content": "four\n"})
	h.ok("edit", map[string]string{"path": "a.txt", "old_string": "four", "new_string": "five"})
	assert.Equal(t, "five\n", h.content("a.txt"), "consecutive changes need no new read")
}

func TestFileToolsStayInWorkspace(t *testing.T) {
	h := newFileHarness(t)
	writeFile(t, filepath.Join(h.outside, "secret.txt"), "secret\n")
	require.NoError(t, os.Symlink(h.outside, h.path("out")))
	require.NoError(t, os.Symlink(filepath.Join(h.outside, "secret.txt"), h.path("s.txt")))

	for _, p := range []string{"../outside/secret.txt", filepath.Join(h.outside, "secret.txt"), "out/secret.txt", "s.txt"} {
		assert.Contains(t, h.fails("read", map[string]string{"path": p}), "outside the workspace", p)
		assert.Contains(t, h.fails("write", map[string]string{"path": p, "content": "x"}), "outside the workspace", p)
		assert.Contains(t, h.fails("edit", map[string]string{"path": p, "old_string": "secret", "new_string": "x"}), "outside the workspace", p)
	}
	assert.Contains(t, h.fails("write", map[string]string{"path": "out/new/file.txt", "content": "x"}), "outside the workspace")
	_, err := os.Stat(filepath.Join(h.outside, "new"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no directory was created outside")
	assert.Contains(t, h.fails("grep", map[string]string{"pattern": "secret", "path": "out"}), "outside the workspace")
	assert.Contains(t, h.fails("glob", map[string]string{"pattern": "*", "path": "../outside"}), "outside the workspace")

	res := h.ok("grep", map[string]string{"pattern": "secret"})
	assert.Contains(t, res.Content, "No matches", "grep does not follow symlinks out")
	assert.Equal(t, "secret\n", func() string { b, _ := os.ReadFile(filepath.Join(h.outside, "secret.txt")); return string(b) }())
}

func TestWriteThroughHardLinkRefused(t *testing.T) {
	h := newFileHarness(t)
	target := filepath.Join(h.outside, "target.txt")
	writeFile(t, target, "outside\n")
	if err := os.Link(target, h.path("hard.txt")); err != nil {
		t.Skipf("hard links unsupported: %v", err)
	}
	h.ok("read", map[string]string{"path": "hard.txt"})
	assert.Contains(t, h.fails("write", map[string]string{"path": "hard.txt", "content": "x"}), "hard links")
	assert.Contains(t, h.fails("edit", map[string]string{"path": "hard.txt", "old_string": "outside", "new_string": "x"}), "hard links")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "outside\n", string(b))
}

// preview asks tool what the call would change.
func (h *fileHarness) preview(tool string, args any) string {
	h.t.Helper()
	tl, ok := h.reg.Get(tool)
	require.True(h.t, ok, "tool %s", tool)
	p, ok := tl.(Previewer)
	require.True(h.t, ok, "%s previews its calls", tool)
	b, err := json.Marshal(args)
	require.NoError(h.t, err)
	return p.Preview(context.Background(), b)
}

func TestFileToolsPreview(t *testing.T) {
	h := newFileHarness(t)
	h.write("main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	want := "--- a/main.go\n+++ b/main.go\n@@ -1,5 +1,5 @@\n package main\n \n func main() {\n-\tprintln(\"hi\")\n+\tprintln(\"bye\")\n }\n"
	assert.Equal(t, want, h.preview("edit", map[string]any{"path": "main.go", "old_string": `"hi"`, "new_string": `"bye"`}))
	assert.Equal(t, want, h.preview("multi_edit", map[string]any{"path": "main.go", "edits": []map[string]string{
		{"old_string": `"hi"`, "new_string": `"hey"`}, {"old_string": `"hey"`, "new_string": `"bye"`}}}))
	assert.Equal(t, "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n", h.content("main.go"), "a preview changes nothing")
	assert.Empty(t, h.preview("edit", map[string]any{"path": "main.go", "old_string": "missing", "new_string": "x"}), "an edit that would fail shows nothing")
	assert.Empty(t, h.preview("edit", map[string]any{"path": 3}), "bad arguments show nothing")

	assert.Equal(t, "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", h.preview("write", map[string]any{"path": "new.txt", "content": "one\ntwo\n"}))
	assert.NoFileExists(t, h.root+"/new.txt")
	assert.Equal(t, "--- a/main.go\n+++ b/main.go\n@@ -1,5 +1,1 @@\n-package main\n-\n-func main() {\n-\tprintln(\"hi\")\n-}\n+package other\n",
		h.preview("write", map[string]any{"path": "main.go", "content": "package other\n"}))
	assert.Empty(t, h.preview("write", map[string]any{"path": h.outside + "/x", "content": "x"}), "outside the workspace: nothing")
}
