package secrets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfine(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	home := filepath.Join(base, "home")
	cfg := filepath.Join(home, ".config", "decode")
	for _, d := range []string{filepath.Join(repo, "sub"), cfg, filepath.Join(home, ".aws")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p string) { require.NoError(t, os.WriteFile(p, []byte("x"), 0o644)) }
	write(filepath.Join(home, ".aws", "credentials"))
	write(filepath.Join(repo, "sub", "inside.md"))
	write(filepath.Join(cfg, "AGENTS.md"))
	link := func(target, name string) { require.NoError(t, os.Symlink(target, filepath.Join(repo, name))) }
	link("../home/.aws/credentials", "creds")
	link("sub/inside.md", "ok")
	link("../home/.config/decode/AGENTS.md", "user")
	link("../home", "up")
	link("missing", "dangling")

	assert.NoError(t, Confine(filepath.Join(repo, "ok"), repo, cfg), "a symlink within the repository")
	assert.NoError(t, Confine(filepath.Join(repo, "user"), repo, cfg), "a symlink into the user's config dir")
	assert.NoError(t, Confine(filepath.Join(home, ".aws", "credentials"), repo, cfg), "a path outside the repository is the user's choice")
	assert.NoError(t, Confine(filepath.Join(repo, "creds"), "", cfg), "no root confines nothing")

	err := Confine(filepath.Join(repo, "creds"), repo, cfg)
	assert.True(t, IsOutside(err), "a symlink out of the repository: %v", err)
	assert.Contains(t, err.Error(), filepath.Join(home, ".aws", "credentials"), "the error names where it leads")
	err = Confine(filepath.Join(repo, "up", ".aws", "credentials"), repo, cfg)
	assert.True(t, IsOutside(err), "a symlinked directory out of the repository: %v", err)
	_, err = Open(filepath.Join(repo, "dangling"), repo)
	assert.ErrorIs(t, err, os.ErrNotExist, "a dangling symlink reads as missing")

	_, err = ReadFile(filepath.Join(repo, "creds"), repo)
	assert.True(t, IsOutside(err))
	data, err := ReadFile(filepath.Join(repo, "ok"), repo)
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))

	// The repository reached through a symlink is confined all the same.
	alias := filepath.Join(base, "alias")
	require.NoError(t, os.Symlink(repo, alias))
	assert.True(t, IsOutside(Confine(filepath.Join(alias, "creds"), alias)))
	assert.True(t, IsOutside(Confine(filepath.Join(alias, "creds"), repo)))
}
