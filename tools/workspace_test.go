package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestWorkspace returns a workspace over a fresh temporary directory
// (symlinks resolved) and an outside directory next to it.
func newTestWorkspace(t *testing.T) (ws *Workspace, root, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	ws, err = NewWorkspace(root)
	require.NoError(t, err)
	return ws, root, outside
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestResolveInside(t *testing.T) {
	ws, root, _ := newTestWorkspace(t)
	writeFile(t, filepath.Join(root, "a", "b.go"), "x")
	require.NoError(t, os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")))

	cases := map[string]string{
		"a/b.go":                         filepath.Join(root, "a", "b.go"),
		"./a/../a/b.go":                  filepath.Join(root, "a", "b.go"),
		filepath.Join(root, "a", "b.go"): filepath.Join(root, "a", "b.go"),
		"link/b.go":                      filepath.Join(root, "a", "b.go"), // symlink inside, resolved
		"new/dir/file.txt":               filepath.Join(root, "new", "dir", "file.txt"),
		"link/new.txt":                   filepath.Join(root, "a", "new.txt"),
		".":                              root,
	}
	for in, want := range cases {
		got, err := ws.Resolve(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
}

func TestResolveRefusesEscapes(t *testing.T) {
	ws, root, outside := newTestWorkspace(t)
	writeFile(t, filepath.Join(outside, "secret"), "s")
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "outdir")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "outfile")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(root, "dangling")))
	require.NoError(t, os.Symlink("../outside/secret", filepath.Join(root, "relout")))

	for _, p := range []string{
		"../outside/secret",
		"a/../../outside/secret",
		filepath.Join(outside, "secret"),
		"/etc/passwd",
		"outdir/secret",         // symlinked directory pointing out
		"outdir/new.txt",        // a new file under it
		"outdir/newdir/new.txt", // new directories under it
		"outfile",               // symlinked file pointing out
		"relout",                // relative symlink pointing out
		"dangling",              // would create a file outside
		"",                      // no path at all
	} {
		_, err := ws.Resolve(p)
		assert.Error(t, err, "%q must be refused", p)
	}
}

func TestResolveLookAlikeNamesAreNames(t *testing.T) {
	ws, root, _ := newTestWorkspace(t)
	// One-dot leaders, a fullwidth solidus and a division slash look like
	// "..", "/" but are ordinary characters of a file name.
	for _, name := range []string{"\u2024\u2024", "\uff0e\uff0e", "a\uff0fb", "x\u2215..\u2215y", "\u2025"} {
		got, err := ws.Resolve(name)
		require.NoError(t, err, name)
		assert.Equal(t, filepath.Join(root, name), got, name)
	}
}

func TestResolveExtraRoots(t *testing.T) {
	_, root, outside := newTestWorkspace(t)
	ws, err := NewWorkspace(root, outside)
	require.NoError(t, err)
	got, err := ws.Resolve(filepath.Join(outside, "f.txt"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(outside, "f.txt"), got)
	assert.Equal(t, []string{root, outside}, ws.Roots())
	assert.Equal(t, filepath.Join(outside, "f.txt"), ws.Rel(got), "outside the main root Rel stays absolute")

	_, err = NewWorkspace(root, filepath.Join(outside, "missing"))
	assert.Error(t, err, "an --add-dir that does not exist")
}

func TestResolveSymlinkLoop(t *testing.T) {
	ws, root, _ := newTestWorkspace(t)
	require.NoError(t, os.Symlink("b", filepath.Join(root, "a")))
	require.NoError(t, os.Symlink("a", filepath.Join(root, "b")))
	_, err := ws.Resolve("a/x")
	assert.ErrorContains(t, err, "too many levels")
}

func TestResolveForWriteRefusesHardLinks(t *testing.T) {
	ws, root, outside := newTestWorkspace(t)
	writeFile(t, filepath.Join(outside, "target"), "t")
	if err := os.Link(filepath.Join(outside, "target"), filepath.Join(root, "hard")); err != nil {
		t.Skipf("hard links unsupported: %v", err)
	}
	_, err := ws.Resolve("hard")
	assert.NoError(t, err, "reading through a hard link is allowed")
	_, err = ws.ResolveForWrite("hard")
	assert.ErrorContains(t, err, "hard links")

	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	_, err = ws.ResolveForWrite("d")
	assert.ErrorContains(t, err, "directory")
	_, err = ws.ResolveForWrite("fresh.txt")
	assert.NoError(t, err)
}

func TestWorkspaceRootGivenThroughSymlink(t *testing.T) {
	_, root, _ := newTestWorkspace(t)
	alias := filepath.Join(filepath.Dir(root), "alias")
	require.NoError(t, os.Symlink(root, alias))
	ws, err := NewWorkspace(alias)
	require.NoError(t, err)
	assert.Equal(t, root, ws.Root())
	got, err := ws.Resolve(filepath.Join(alias, "f"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "f"), got)
	assert.Equal(t, "f", ws.Rel(got))
	assert.Equal(t, "f", ws.Rel(filepath.Join(alias, "f")))
	assert.Equal(t, ".", ws.Rel(root))
	assert.True(t, ws.Inside(got))
	assert.False(t, ws.Inside(filepath.Dir(root)))
}
