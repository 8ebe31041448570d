//go:build linux

package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fullScanner returns a snapshotter of dir for a new session that scans
// the whole tree every time, as a reference.
func (tb *testbed) fullScanner(dir string) *Snapshotter {
	tb.t.Helper()
	_, sn := tb.snapshotter(dir)
	_, err := sn.Top(context.Background())
	require.NoError(tb.t, err)
	require.NoError(tb.t, sn.Close())
	return sn
}

// treeWorld changes a work tree at random, in the ways tools do.
type treeWorld struct {
	t   *testing.T
	dir string
	rng *rand.Rand
	n   int
}

func (w *treeWorld) path(p string) string { return filepath.Join(w.dir, filepath.FromSlash(p)) }

// files lists the regular files and symlinks under the work tree (not in
// .git), relative to it.
func (w *treeWorld) files() (files, dirs []string) {
	filepath.WalkDir(w.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(w.dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir() && rel != ".":
			dirs = append(dirs, rel)
		case !d.IsDir():
			files = append(files, rel)
		}
		return nil
	})
	return files, dirs
}

func (w *treeWorld) pick(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[w.rng.IntN(len(s))]
}

func (w *treeWorld) write(p, body string) {
	require.NoError(w.t, os.MkdirAll(filepath.Dir(w.path(p)), 0o755))
	require.NoError(w.t, os.WriteFile(w.path(p), []byte(body), 0o644))
}

// step makes one random change and says what it was.
func (w *treeWorld) step() string {
	w.n++
	files, dirs := w.files()
	f, d := w.pick(files), w.pick(dirs)
	name := fmt.Sprintf("n%d", w.n)
	switch op := w.rng.IntN(18); op {
	case 16: // sed -i: a temporary file renamed over the file
		if f == "" {
			return "nothing"
		}
		if fi, err := os.Lstat(w.path(f)); err != nil || !fi.Mode().IsRegular() {
			return "nothing"
		}
		tmp := filepath.ToSlash(filepath.Join(filepath.Dir(f), "sed"+name))
		w.write(tmp, "sed "+name+"\n")
		require.NoError(w.t, os.Rename(w.path(tmp), w.path(f)))
		return "sed -i " + f
	case 17: // a file that comes and goes (a swap file)
		p := filepath.ToSlash(filepath.Join(d, "."+name+".swp"))
		w.write(p, "swap")
		require.NoError(w.t, os.Remove(w.path(p)))
		return "swap " + p
	case 0, 1: // edit a file in place
		if f == "" {
			return "nothing"
		}
		if fi, err := os.Lstat(w.path(f)); err == nil && fi.Mode().IsRegular() {
			fh, err := os.OpenFile(w.path(f), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(w.t, err)
			fmt.Fprintf(fh, "edit %d\n", w.n)
			require.NoError(w.t, fh.Close())
		}
		return "edit " + f
	case 2: // a new file beside others
		p := filepath.ToSlash(filepath.Join(filepath.Dir(f), name+".txt"))
		w.write(p, "new "+name)
		return "new file " + p
	case 3: // a new directory tree
		p := filepath.ToSlash(filepath.Join(d, name, "deep", "x.txt"))
		w.write(p, "deep "+name)
		w.write(filepath.ToSlash(filepath.Join(d, name, "y.txt")), "y")
		return "new tree " + p
	case 4: // remove a file
		if f == "" {
			return "nothing"
		}
		require.NoError(w.t, os.Remove(w.path(f)))
		return "rm " + f
	case 5: // remove a directory tree
		if d == "" {
			return "nothing"
		}
		require.NoError(w.t, os.RemoveAll(w.path(d)))
		return "rm -r " + d
	case 6: // rename a file (sed -i and editors write a new file and rename it)
		if f == "" {
			return "nothing"
		}
		to := filepath.ToSlash(filepath.Join(w.pick(append(dirs, ".")), name+filepath.Ext(f)))
		require.NoError(w.t, os.Rename(w.path(f), w.path(to)))
		return "mv " + f + " " + to
	case 7: // rename a directory, then change something inside it
		if d == "" {
			return "nothing"
		}
		to := filepath.ToSlash(filepath.Join(filepath.Dir(d), name))
		if strings.HasPrefix(to+"/", d+"/") {
			return "nothing"
		}
		require.NoError(w.t, os.Rename(w.path(d), w.path(to)))
		w.write(to+"/after-"+name+".txt", "moved "+name)
		return "mv " + d + " " + to
	case 8: // the executable bit
		if f == "" {
			return "nothing"
		}
		if fi, err := os.Lstat(w.path(f)); err == nil && fi.Mode().IsRegular() {
			require.NoError(w.t, os.Chmod(w.path(f), fi.Mode()^0o111))
		}
		return "chmod " + f
	case 9: // ignored files and an ignored directory
		w.write(filepath.ToSlash(filepath.Join(d, name+".log")), "log")
		w.write("build/"+name+".o", "obj")
		return "ignored " + name
	case 10: // .gitignore edited: what it ignores comes and goes
		gi := filepath.ToSlash(filepath.Join(d, ".gitignore"))
		if w.rng.IntN(2) == 0 {
			gi = ".gitignore"
		}
		if fi, err := os.Lstat(w.path(gi)); err == nil && !fi.Mode().IsRegular() {
			return "nothing"
		}
		body, _ := os.ReadFile(w.path(gi))
		if strings.Contains(string(body), "*.log\n") && w.rng.IntN(2) == 0 {
			body = []byte(strings.ReplaceAll(string(body), "*.log\n", ""))
		} else {
			body = append(body, "*.log\n"...)
		}
		w.write(gi, string(body))
		return "edit " + gi
	case 11: // a symlink, or a file replaced by one
		p := filepath.ToSlash(filepath.Join(d, name))
		require.NoError(w.t, os.MkdirAll(filepath.Dir(w.path(p)), 0o755))
		require.NoError(w.t, os.Symlink("target-"+name, w.path(p)))
		return "ln -s " + p
	case 12: // a file replaced by a directory
		if f == "" {
			return "nothing"
		}
		require.NoError(w.t, os.Remove(w.path(f)))
		w.write(f+"/inside.txt", "was a file")
		return "file to dir " + f
	case 13: // times change, content does not
		if f == "" {
			return "nothing"
		}
		now := unix.NsecToTimespec(int64(w.n) * 1e9)
		unix.UtimesNanoAt(unix.AT_FDCWD, w.path(f), []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW)
		return "touch " + f
	case 14: // a file too big to snapshot
		p := filepath.ToSlash(filepath.Join(d, name+".bin"))
		require.NoError(w.t, os.MkdirAll(filepath.Dir(w.path(p)), 0o755))
		fh, err := os.Create(w.path(p))
		require.NoError(w.t, err)
		require.NoError(w.t, fh.Truncate(MaxSnapshotFile+1)) // sparse
		require.NoError(w.t, fh.Close())
		return "big " + p
	default: // the same bytes written again
		if f == "" {
			return "nothing"
		}
		if b, err := os.ReadFile(w.path(f)); err == nil {
			if fi, err := os.Lstat(w.path(f)); err == nil && fi.Mode().IsRegular() {
				require.NoError(w.t, os.WriteFile(w.path(f), b, 0))
			}
		}
		return "rewrite " + f
	}
}

// TestSnapshotWatcherMatchesFullScan changes a work tree at random (edits,
// new files and trees, removals, renames of files and directories, modes,
// ignored files, .gitignore edits, symlinks, big files) and after each
// batch compares the snapshot of a snapshotter that asks git only about
// the paths its watcher heard of with one that scans the whole tree.
func TestSnapshotWatcherMatchesFullScan(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	seed := rand.Uint64()
	if s := os.Getenv("SNAPSEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d", seed)
	w := &treeWorld{t: t, dir: dir, rng: rand.New(rand.NewPCG(19, seed))}
	for i := range 40 {
		w.write(fmt.Sprintf("pkg%d/sub%d/f%d.go", i%4, i%3, i), fmt.Sprint("package x // ", i, "\n"))
	}
	w.write(".gitignore", "build/\n")
	tb.git(dir, "add", "-A")
	tb.git(dir, "commit", "-q", "-m", "tree")
	w.write("untracked/u.txt", "not added")

	_, sn := tb.snapshotter(dir)
	ref := tb.fullScanner(dir)
	ctx := context.Background()
	fulls := 1 // the first
	for batch := range 60 {
		var did []string
		for range 1 + w.rng.IntN(3) {
			did = append(did, w.step())
		}
		t.Logf("batch %d: %v", batch, did)
		if slices.ContainsFunc(did, func(op string) bool { return slices.Contains(strings.Fields(op), ".gitignore") }) {
			fulls++ // the top .gitignore changed: what is ignored anywhere may have
		}
		got, err := sn.Snapshot(ctx)
		require.NoError(t, err, "batch %d: %v", batch, did)
		want, err := ref.Snapshot(ctx)
		require.NoError(t, err, "batch %d: %v", batch, did)
		require.Equal(t, want.Tree, got.Tree, "batch %d (%v): the watched snapshot differs from a full scan:\n%s",
			batch, did, tb.git(dir, "diff-tree", "-r", "--name-status", want.Tree, got.Tree))
		require.Equal(t, want.Skipped, got.Skipped, "batch %d (%v)", batch, did)
	}
	assert.LessOrEqual(t, sn.scans.full, fulls, "only the first snapshot and those after the top .gitignore changed scan the whole tree")
	assert.Greater(t, sn.scans.paths+sn.scans.files, 30, "the others ask git about the changed paths")
	assert.Positive(t, sn.scans.paths, "some with git status")
	assert.Positive(t, sn.scans.files, "some, where only files of the index changed, without")
	tb.git(dir, "fsck", "--strict", "--no-dangling")
}

// TestSnapshotWithNothingChangedRunsNoGit: once a snapshot was taken, one
// with nothing changed since returns the same tree without running git.
func TestSnapshotWithNothingChangedRunsNoGit(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	_, sn := tb.snapshotter(dir)
	ctx := context.Background()
	first, err := sn.Snapshot(ctx)
	require.NoError(t, err)
	sn.env = append(sn.env, "GIT_DIR="+t.TempDir()) // any git run now fails
	again, err := sn.Snapshot(ctx)
	require.NoError(t, err, "no git command ran")
	assert.Equal(t, first.Tree, again.Tree)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // changed\n"), 0o644))
	_, err = sn.Snapshot(ctx)
	assert.Error(t, err, "a change is asked of git")
}

// TestWatcherOverflowScansWhole: when the kernel dropped events, the next
// snapshot scans the whole tree and directories made meanwhile are watched.
func TestWatcherOverflowScansWhole(t *testing.T) {
	dir := t.TempDir()
	w := newFSWatcher(dir, func(string) bool { return false })
	require.NotNil(t, w)
	defer w.close()
	_, full, ok := w.take()
	require.True(t, ok)
	assert.False(t, full)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	assert.True(t, w.event(-1, unix.IN_Q_OVERFLOW, ""), "an overflow is survived")
	_, full, ok = w.take()
	require.True(t, ok)
	assert.True(t, full, "events were lost: scan whole")
	assert.Contains(t, w.dirs, "a/b", "directories made meanwhile are watched")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "f"), nil, 0o644))
	paths, full, ok := w.take()
	require.True(t, ok)
	assert.False(t, full)
	assert.Equal(t, []string{"a/b/f"}, paths)

	require.NoError(t, os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "c")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c", "b", "g"), nil, 0o644))
	paths, _, _ = w.take()
	slices.Sort(paths)
	assert.Equal(t, []string{"a", "c"}, paths, "a moved directory is heard of by both names")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c", "b", "h"), nil, 0o644))
	paths, _, _ = w.take()
	assert.Equal(t, []string{"c/b/h"}, paths, "and watched under its new name")

	require.NoError(t, os.RemoveAll(dir))
	_, _, ok = w.take()
	assert.False(t, ok, "the top went away: the watcher gives up")
}

// TestSnapshotSeesExcludeFileChanges: info/exclude and the global excludes
// file are not in the work tree, so no event says what they un-ignore; a
// change to either makes the next snapshot scan the whole tree.
func TestSnapshotSeesExcludeFileChanges(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	exclude := filepath.Join(dir, ".git", "info", "exclude")
	global := filepath.Join(tb.vars["XDG_CONFIG_HOME"], "git", "ignore")
	require.NoError(t, os.MkdirAll(filepath.Dir(exclude), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Dir(global), 0o755))
	require.NoError(t, os.WriteFile(exclude, []byte("*.log\n"), 0o644))
	require.NoError(t, os.WriteFile(global, []byte("*.tmp\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.log"), []byte("log"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.tmp"), []byte("tmp"), 0o644))
	_, sn := tb.snapshotter(dir)
	ctx := context.Background()
	d, err := sn.Snapshot(ctx)
	require.NoError(t, err)
	require.NotNil(t, sn.watch)
	assert.Equal(t, "main.go", tb.git(dir, "ls-tree", "-r", "--name-only", d.Tree))

	require.NoError(t, os.WriteFile(exclude, nil, 0o644))
	d, err = sn.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, "main.go\nx.log", tb.git(dir, "ls-tree", "-r", "--name-only", d.Tree), "un-ignored by info/exclude")

	require.NoError(t, os.WriteFile(global, []byte("# nothing\n"), 0o644))
	d, err = sn.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, "main.go\nx.log\nx.tmp", tb.git(dir, "ls-tree", "-r", "--name-only", d.Tree), "un-ignored by the global excludes file")
}

// TestSnapshotKeepsSkipWorktreeEntries: a sparse checkout's skip-worktree
// entries have no file; one appearing and going again at such a path must
// not drop the entry (git update-index --remove would).
func TestSnapshotKeepsSkipWorktreeEntries(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	sparse := filepath.Join(dir, "sparse", "b.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(sparse), 0o755))
	require.NoError(t, os.WriteFile(sparse, []byte("b\n"), 0o644))
	tb.git(dir, "add", "-A")
	tb.git(dir, "commit", "-q", "-m", "sparse")
	tb.git(dir, "update-index", "--skip-worktree", "sparse/b.txt")
	require.NoError(t, os.Remove(sparse))

	_, sn := tb.snapshotter(dir)
	ctx := context.Background()
	first, err := sn.Snapshot(ctx)
	require.NoError(t, err)
	require.NotNil(t, sn.watch)
	require.NoError(t, os.WriteFile(sparse, []byte("scratch\n"), 0o644))
	require.NoError(t, os.Remove(sparse))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // edited\n"), 0o644))
	got, err := sn.Snapshot(ctx)
	require.NoError(t, err)
	want, err := tb.fullScanner(dir).Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, want.Tree, got.Tree)
	assert.Contains(t, tb.git(dir, "ls-tree", "-r", "--name-only", got.Tree), "sparse/b.txt")
	assert.NotEqual(t, first.Tree, got.Tree)
}
