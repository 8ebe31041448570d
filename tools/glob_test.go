package tools

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ignoreTree writes a tree with nested .gitignore files and .git/info/exclude.
func ignoreTree(h *fileHarness) {
	h.write(".gitignore", "*.log\nbuild/\n!keep.log\n")
	h.write(".git/info/exclude", "excluded.go\n")
	h.write(".git/HEAD", "ref: refs/heads/main\n")
	h.write("a.go", "package a // needle\n")
	h.write("excluded.go", "needle\n")
	h.write("b.log", "needle\n")
	h.write("keep.log", "needle\n")
	h.write("build/x.go", "needle\n")
	h.write("sub/.gitignore", "secret.txt\n/only-here.go\n")
	h.write("sub/secret.txt", "needle\n")
	h.write("sub/only-here.go", "needle\n")
	h.write("sub/c.go", "needle\n")
	h.write("sub/deep/d.go", "needle\n")
	h.write("sub/deep/only-here.go", "needle\n")
	h.write("sub/deep/x.log", "needle\n")
}

// globList runs glob and returns its lines.
func (h *fileHarness) globList(args map[string]string) []string {
	h.t.Helper()
	res := h.ok("glob", args)
	if strings.HasPrefix(res.Content, "No files") {
		return nil
	}
	return strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
}

func TestGlobHonoursGitignore(t *testing.T) {
	h := newFileHarness(t)
	ignoreTree(h)
	sorted := func(s []string) []string { return sortedCopy(s) }

	assert.Equal(t, []string{"a.go", "sub/c.go", "sub/deep/d.go", "sub/deep/only-here.go"}, sorted(h.globList(map[string]string{"pattern": "**/*.go"})))
	assert.Equal(t, sorted(h.globList(map[string]string{"pattern": "**/*.go"})), sorted(h.globList(map[string]string{"pattern": "*.go"})), "no slash: any depth")
	assert.Equal(t, []string{"keep.log"}, h.globList(map[string]string{"pattern": "*.log"}), "negation re-includes keep.log")
	assert.Equal(t, []string{"sub/deep/d.go", "sub/deep/only-here.go"}, sorted(h.globList(map[string]string{"pattern": "*", "path": "sub/deep"})), "ancestor .gitignore files apply")
	assert.Equal(t, []string{"build/x.go"}, h.globList(map[string]string{"pattern": "*", "path": "build"}), "an ignored directory named explicitly is searched")
	assert.Equal(t, []string{"sub/c.go"}, h.globList(map[string]string{"pattern": "sub/*.go"}))
	assert.Empty(t, h.globList(map[string]string{"pattern": "**/HEAD"}), ".git is skipped")
	assert.Equal(t, []string{"sub/deep/d.go"}, h.globList(map[string]string{"pattern": h.path("sub") + "/**/d.go"}), "absolute pattern")
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func TestGlobNewestFirstAndCapped(t *testing.T) {
	h := newFileHarness(t)
	base := time.Now().Add(-time.Hour)
	for i := range globMax + 50 {
		name := fmt.Sprintf("f%03d.txt", i)
		h.write(name, "")
		mt := base.Add(time.Duration(i) * time.Second)
		require.NoError(t, os.Chtimes(h.path(name), mt, mt))
	}
	res := h.ok("glob", map[string]string{"pattern": "*.txt"})
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	require.Len(t, lines, globMax+1)
	assert.Equal(t, "f249.txt", lines[0], "newest first")
	assert.Equal(t, "f050.txt", lines[globMax-1])
	assert.Equal(t, "(200 of 250 files shown, newest first; narrow the pattern or path)", lines[globMax])
	assert.Equal(t, "glob *.txt: 250 files", res.Note)
}

func TestGlobErrors(t *testing.T) {
	h := newFileHarness(t)
	h.write("f.txt", "")
	assert.Contains(t, h.fails("glob", map[string]string{"pattern": "[a"}), "invalid glob")
	assert.Contains(t, h.fails("glob", map[string]string{"pattern": "../*"}), "contains ..")
	assert.Contains(t, h.fails("glob", map[string]string{"pattern": "*", "path": "f.txt"}), "not a directory")
	assert.Contains(t, h.fails("glob", map[string]string{"pattern": "*", "path": "nope"}), "does not exist")
	assert.Contains(t, h.ok("glob", map[string]string{"pattern": "*.md"}).Content, "No files match")
}
