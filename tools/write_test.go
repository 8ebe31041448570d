package tools

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteCreatesFileAndParents(t *testing.T) {
	h := newFileHarness(t)
	res := h.ok("write", map[string]string{"path": "a/b/c.txt", "content": "one\ntwo"})
	assert.Equal(t, "Created a/b/c.txt (2 lines, 7 bytes).", res.Content)
	assert.Equal(t, "created a/b/c.txt (2 lines)", res.Note)
	assert.Equal(t, "one\ntwo", h.content("a/b/c.txt"))

	res = h.ok("write", map[string]string{"path": "a/b/c.txt", "content": "one\nTWO\nthree\n"})
	assert.Equal(t, "wrote a/b/c.txt (+2 -1)", res.Note, "a file it created counts as read")
	assert.Equal(t, "one\nTWO\nthree\n", h.content("a/b/c.txt"))

	res = h.ok("write", map[string]string{"path": "empty.txt", "content": ""})
	assert.Equal(t, "Created empty.txt (0 lines, 0 bytes).", res.Content)
}

func TestWriteOverwriteKeepsMode(t *testing.T) {
	h := newFileHarness(t)
	h.write("x.sh", "old\n")
	require.NoError(t, os.Chmod(h.path("x.sh"), 0o700))
	h.ok("read", map[string]string{"path": "x.sh"})
	h.ok("write", map[string]string{"path": "x.sh", "content": "new\n"})
	fi, err := os.Stat(h.path("x.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	assert.Equal(t, "new\n", h.content("x.sh"))
}

func TestWriteThroughInsideSymlink(t *testing.T) {
	h := newFileHarness(t)
	h.write("real/f.txt", "a\n")
	require.NoError(t, os.Symlink("real", h.path("alias")))
	h.ok("read", map[string]string{"path": "alias/f.txt"})
	h.ok("write", map[string]string{"path": "real/f.txt", "content": "b\n"})
	assert.Equal(t, "b\n", h.content("real/f.txt"), "both names are one file to the read record")
	fi, err := os.Lstat(h.path("alias"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the symlink itself is left alone")
}
