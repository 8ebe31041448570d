package session

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotter returns a snapshotter for a new session of the store of dir,
// seeing only the testbed's environment.
func (tb *testbed) snapshotter(dir string) (*Session, *Snapshotter) {
	tb.t.Helper()
	s, err := tb.store(dir).Create(context.Background())
	require.NoError(tb.t, err)
	sn := s.Snapshotter(dir)
	sn.getenv = func(k string) string { return tb.vars[k] }
	return s, sn
}

func fileSum(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

func TestSnapshotTakesUntrackedLeavesUserIndex(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.log"), []byte("ignored"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // changed\n"), 0o644))
	index := fileSum(t, filepath.Join(dir, ".git", "index"))
	head := tb.git(dir, "rev-parse", "HEAD")

	s, sn := tb.snapshotter(dir)
	d, err := sn.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, ".gitignore\nmain.go\nnew.txt", tb.git(dir, "ls-tree", "-r", "--name-only", d.Tree))
	assert.Equal(t, "package main // changed", tb.git(dir, "cat-file", "blob", d.Tree+":main.go"))
	assert.Equal(t, index, fileSum(t, filepath.Join(dir, ".git", "index")), "the user's index is untouched")
	assert.Equal(t, head, tb.git(dir, "rev-parse", "HEAD"))
	assert.Equal(t, d.Commit, tb.git(dir, "rev-parse", CodeRef(s.ID())))

	// unchanged: same tree, no new commit
	again, err := sn.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, d.Tree, again.Tree)
	assert.Equal(t, d.Commit, again.Commit)

	// a deletion and a change are seen by the warm index
	require.NoError(t, os.Remove(filepath.Join(dir, "new.txt")))
	next, err := sn.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, ".gitignore\nmain.go", tb.git(dir, "ls-tree", "-r", "--name-only", next.Tree))
	assert.Equal(t, d.Commit, tb.git(dir, "rev-parse", next.Commit+"^"), "the code ref is a chain")

	tb.git(dir, "gc", "-q", "--prune=now")
	tb.git(dir, "cat-file", "-e", d.Tree+":new.txt")
	tb.git(dir, "fsck", "--strict", "--no-dangling")
}

func TestSnapshotSkipsLargeFilesAndHugeDirectories(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	big, err := os.Create(filepath.Join(dir, "big.bin"))
	require.NoError(t, err)
	require.NoError(t, big.Truncate(MaxSnapshotFile+1)) // sparse: costs no disk
	require.NoError(t, big.Close())
	small := filepath.Join(dir, "small")
	require.NoError(t, os.MkdirAll(filepath.Join(small, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(small, "sub", "a.txt"), []byte("a"), 0o644))
	inner, err := os.Create(filepath.Join(small, "inner-big.bin"))
	require.NoError(t, err)
	require.NoError(t, inner.Truncate(MaxSnapshotFile+1))
	require.NoError(t, inner.Close())
	huge := filepath.Join(dir, "huge")
	require.NoError(t, os.MkdirAll(huge, 0o755))
	for i := range MaxSnapshotDirFiles + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(huge, fmt.Sprint(i)), nil, 0o644))
	}

	_, sn := tb.snapshotter(dir)
	d, err := sn.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "main.go\nsmall/sub/a.txt", tb.git(dir, "ls-tree", "-r", "--name-only", d.Tree))
	var skipped []string
	for _, s := range d.Skipped {
		skipped = append(skipped, s.Path+": "+s.Reason)
	}
	assert.ElementsMatch(t, []string{
		"big.bin: larger than 10 MiB (10485761 bytes)",
		"small/inner-big.bin: larger than 10 MiB (10485761 bytes)",
		"huge/: a new directory of more than 1000 files",
	}, skipped)
}

func TestSnapshotOfRepositoryWithoutCommits(t *testing.T) {
	tb := newTestbed(t)
	dir := filepath.Join(t.TempDir(), "fresh")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tb.git(dir, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o755))
	_, sn := tb.snapshotter(dir)
	d, err := sn.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "100755 blob 2e65efe2a145dda7ee51d1741299f848e5bf752e\ta.txt", tb.git(dir, "ls-tree", "-r", d.Tree))
}

// TestSnapshotSurvivesKill kills a process taking snapshots (and the git
// commands it runs) with SIGKILL at random moments; each time, the next
// snapshot works, the user's repository has no stray lock, and git fsck
// stays clean.
func TestSnapshotSurvivesKill(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	for i := range 300 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint(i)), 0o644))
	}
	tb.git(dir, "add", "-A")
	tb.git(dir, "commit", "-q", "-m", "files")
	s, err := tb.store(dir).Create(context.Background())
	require.NoError(t, err)
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotKillHelper$")
		cmd.Env = append(tb.environ(), "DECODE_SNAPSHOT_HELPER="+dir+"\n"+s.ID())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL), "round %d", round)
		_ = cmd.Wait()

		sn := s.Snapshotter(dir)
		sn.getenv = func(k string) string { return tb.vars[k] }
		_, err := sn.Snapshot(context.Background())
		require.NoError(t, err, "round %d: a snapshot after the kill", round)
		assert.NoFileExists(t, sn.index+".lock")
		assert.NoFileExists(t, filepath.Join(dir, ".git", "index.lock"))
		tb.git(dir, "status", "--porcelain")
	}
	tb.git(dir, "fsck", "--strict", "--no-dangling")
}

// TestSnapshotKillHelper is the process TestSnapshotSurvivesKill kills: it
// changes files and snapshots them until it dies.
func TestSnapshotKillHelper(t *testing.T) {
	arg := os.Getenv("DECODE_SNAPSHOT_HELPER")
	if arg == "" {
		t.Skip("run by TestSnapshotSurvivesKill")
	}
	dir, id, _ := strings.Cut(arg, "\n")
	st, err := OpenStore(dir, Env{Getenv: os.Getenv})
	require.NoError(t, err)
	sn := (&Session{store: st, id: id}).Snapshotter(dir)
	for i := 0; ; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i%300)), []byte(fmt.Sprint("changed ", i)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("new%d.txt", i)), []byte("new"), 0o644))
		_, err := sn.Snapshot(context.Background())
		require.NoError(t, err)
	}
}

func TestOldPrivateIndexesArePruned(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-8 * 24 * time.Hour)
	for _, n := range []string{"index-a", "index-b", "index-c.tmp123", "index-mine", "other"} {
		p := filepath.Join(dir, n)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index-new"), nil, 0o644))
	pruneIndexes(dir, filepath.Join(dir, "index-mine"), time.Now().Add(-indexMaxAge))
	var left []string
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range es {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{"index-mine", "index-new", "other"}, left)
}
