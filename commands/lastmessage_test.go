package commands

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteLastMessage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "answer.txt")

	require.NoError(t, writeLastMessage(path, "first"), "a new file")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "first", string(got), "exactly the answer")
	old := umask(0)
	umask(old)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666&^old), fi.Mode().Perm(), "a new file's mode is what a shell redirection gives")

	// A write that cannot finish leaves what was there and no temporary
	// file: renaming onto a non-empty directory fails.
	target := filepath.Join(dir, "taken")
	require.NoError(t, os.MkdirAll(filepath.Join(target, "inside"), 0o755))
	err = writeLastMessage(target, "second")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "write --output-last-message "+target, "the error names the flag and the file")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"answer.txt", "taken"}, names, "no temporary file is left behind")
	got, _ = os.ReadFile(path)
	assert.Equal(t, "first", string(got), "the earlier answer is untouched")
}
