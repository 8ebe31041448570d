//go:build unix

package memory

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadSkipsFIFOWithoutBlocking(t *testing.T) {
	root := t.TempDir()
	// Opening a FIFO for reading blocks until a writer comes; Load must not.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "AGENTS.md"), 0o644))

	files, warnings := loadUnder(root, Options{Cwd: root})

	assert.Empty(t, files)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "not a regular file")
}
