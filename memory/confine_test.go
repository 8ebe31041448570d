package memory

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadSkipsFilesLeadingOutOfTheRepository(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".decode", "skills", "x"), 0o755))
	secret := filepath.Join(base, "credentials")
	require.NoError(t, os.WriteFile(secret, []byte("CANARY"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(repo, "AGENTS.md")))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "MEMORY.md"), []byte("kept"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(repo, ".decode", "skills", "x", "SKILL.md")))

	files, warnings := Load(Options{Cwd: repo, Root: repo, UserConfigDir: filepath.Join(base, "cfg")})
	require.Len(t, files, 1, "only MEMORY.md is read")
	assert.Equal(t, "kept", files[0].Content)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "resolves outside the repository")

	files, _ = Load(Options{Cwd: repo, UserConfigDir: filepath.Join(base, "cfg")})
	assert.Len(t, files, 2, "without a root nothing is confined (the check is what keeps the canary out)")

	skills, warnings := Skills(Confinement{Root: repo}, filepath.Join(repo, ".decode", "skills"))
	assert.Empty(t, skills)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "resolves outside the repository")
}

func TestRememberNeverWritesThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	require.NoError(t, os.WriteFile(target, []byte("# mine\n"), 0o644))
	path := filepath.Join(dir, "MEMORY.md")
	require.NoError(t, os.Symlink(target, path))
	_, err := Remember(path, "Run make check to test.", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symlink")
	data, _ := os.ReadFile(target)
	assert.Equal(t, "# mine\n", string(data), "the symlink's target is untouched")

	dangling := filepath.Join(dir, "sub", "MEMORY.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(dangling), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "new-hook"), dangling))
	_, err = Remember(dangling, "Run make check to test.", time.Now())
	require.Error(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "new-hook"), "a dangling symlink creates nothing")
}

func TestRememberNeverWritesThroughAHardLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("link counts are read on unix")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	require.NoError(t, os.WriteFile(target, []byte("# mine\n"), 0o644))
	path := filepath.Join(dir, "MEMORY.md")
	require.NoError(t, os.Link(target, path))
	_, err := Remember(path, "Run make check to test.", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hard link")
	data, _ := os.ReadFile(target)
	assert.Equal(t, "# mine\n", string(data))
}
