package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func TestDiscoveryFromASubdirectory(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	sub := filepath.Join(dir, "a", "b")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	assert.Equal(t, realpath(t, filepath.Join(dir, ".git")), tb.store(sub).GitDir())
}

func TestLinkedWorktreeSharesSessions(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	wt := filepath.Join(t.TempDir(), "wt")
	tb.git(dir, "worktree", "add", "-q", wt)

	main := tb.store(dir)
	linked := tb.store(wt)
	assert.Equal(t, main.GitDir(), linked.GitDir(), "a linked worktree uses the common git dir")

	s, err := linked.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 2, "from the worktree")
	got, err := main.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.Len(t, got.Entries(), 2)
	assert.NotEmpty(t, tb.git(dir, "rev-parse", sessionRef(s.ID())), "plain git in the main worktree sees the ref")
	tb.git(dir, "worktree", "remove", wt)
	_, err = main.Open(ctx, s.ID())
	assert.NoError(t, err, "removing the worktree keeps its sessions")
}

func TestGitDirVariable(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	other := tb.repo()
	tb.vars["GIT_DIR"] = filepath.Join(other, ".git")
	assert.Equal(t, filepath.Join(other, ".git"), tb.store(dir).GitDir(), "GIT_DIR wins over discovery")

	tb.vars["GIT_DIR"] = "../" + filepath.Base(other) + "/.git"
	rel := filepath.Join(filepath.Dir(other), "x")
	require.NoError(t, os.MkdirAll(rel, 0o755))
	assert.Equal(t, filepath.Join(other, ".git"), filepath.Clean(tb.store(rel).GitDir()), "a relative GIT_DIR is taken from dir")

	tb.vars["GIT_DIR"] = filepath.Join(t.TempDir(), "nope")
	_, err := OpenStore(dir, tb.env())
	assert.ErrorContains(t, err, "GIT_DIR")
}

func TestCeilingDirectories(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	sub := filepath.Join(dir, "a", "b")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	repoGit := realpath(t, filepath.Join(dir, ".git"))

	tb.vars["GIT_CEILING_DIRECTORIES"] = filepath.Join(dir, "a")
	assert.Equal(t, filepath.Join(tb.home, ".state", "decode"), tb.store(sub).GitDir(),
		"a ceiling between dir and the repository stops the walk")
	_, err := tb.gitErr(sub, "", "rev-parse", "--git-dir")
	assert.Error(t, err, "git agrees: no repository")
	assert.Equal(t, repoGit, tb.store(filepath.Join(dir, "a")).GitDir(),
		"a ceiling equal to dir is no proper ancestor of it, so it does not stop the walk")
	assert.Equal(t, repoGit, realpath(t, tb.git(filepath.Join(dir, "a"), "rev-parse", "--absolute-git-dir")),
		"git agrees")

	tb.vars["GIT_CEILING_DIRECTORIES"] = "relative/path:" + filepath.Dir(dir)
	assert.Equal(t, repoGit, tb.store(sub).GitDir(), "a ceiling above the repository changes nothing")
}

func TestGitfileAndBareDiscovery(t *testing.T) {
	tb := newTestbed(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	tb.git(t.TempDir(), "init", "-q", "--bare", bare)
	assert.Equal(t, realpath(t, bare), tb.store(bare).GitDir(), "inside a bare repository")

	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, ".git"), []byte("gitdir: "+bare+"\n"), 0o644))
	assert.Equal(t, bare, tb.store(work).GitDir(), "a .git file points at the git dir")
}

func TestCeilingFor(t *testing.T) {
	root := t.TempDir()
	root = realpath(t, root)
	a := filepath.Join(root, "a")
	ab := filepath.Join(a, "b")
	require.NoError(t, os.MkdirAll(ab, 0o755))
	tests := []struct {
		list, want string
	}{
		{"", ""},
		{a, a},
		{ab, ""},                             // not a proper ancestor of itself
		{root + ":" + a, a},                  // the longest wins
		{"rel:" + a, a},                      // relative entries are ignored
		{"/", "/"},                           // the root is everyone's ancestor
		{filepath.Join(root, "missing"), ""}, // unresolvable entries are dropped
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ceilingFor(ab, tt.list), "ceiling list %q", tt.list)
	}
}
