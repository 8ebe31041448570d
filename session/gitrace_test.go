package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdLock creates path, as git does for a ref it updates or packs, and
// removes it after d.
func holdLock(t *testing.T, path string, d time.Duration) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	time.AfterFunc(d, func() { os.Remove(path) })
}

// A <ref>.lock held for a moment (git pack-refs pruning the loose ref) is
// waited for, as git waits (core.filesRefLockTimeout, 100 ms): the append
// goes through instead of failing with a conflict.
func TestAppendWaitsForAHeldRefLock(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 1, "one")
	lock := filepath.Join(st.GitDir(), filepath.FromSlash(s.Ref())) + ".lock"

	holdLock(t, lock, 40*time.Millisecond)
	require.NoError(t, s.Append(ctx, userEntry("two")), "a lock held 40 ms is waited for")

	// Held longer than the timeout: a conflict naming the lock file.
	holdLock(t, lock, 600*time.Millisecond)
	began := time.Now()
	err = s.Append(ctx, userEntry("three"))
	require.ErrorIs(t, err, ErrConflict)
	assert.Contains(t, err.Error(), lock)
	assert.True(t, Retryable(err), "a held lock may be released: the loop retries")
	assert.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond, "it waited core.filesRefLockTimeout")
	time.Sleep(700 * time.Millisecond)

	// core.filesRefLockTimeout is honoured.
	tb.git(dir, "config", "core.filesRefLockTimeout", "2000")
	st2 := tb.store(dir)
	s2, err := st2.Open(ctx, s.ID())
	require.NoError(t, err)
	holdLock(t, lock, 500*time.Millisecond)
	require.NoError(t, s2.Append(ctx, userEntry("four")), "waits up to the configured 2 s")
	assert.Equal(t, []string{"one", "two", "four"}, userTexts(t, tb, st2, s.ID()))
	tb.git(dir, "fsck", "--strict")
}

// A ref that moved is not waited for and not retried: it is a conflict.
func TestMovedRefIsNotRetryable(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 2, "x")
	other, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	appendN(t, other, 1, "y")
	err = s.Append(ctx, userEntry("z"))
	require.ErrorIs(t, err, ErrConflict)
	assert.False(t, Retryable(err))
}

// git prune removes empty fan-out directories of objects/. An object whose
// directory vanished is written anyway: the temporary file is created in
// the fan-out directory (made again when missing), as git does.
func TestObjectWriteSurvivesPrunedFanOutDirs(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	objects := filepath.Join(st.GitDir(), "objects")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // what prune does to empty fan-out directories, as fast as it can
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ents, _ := os.ReadDir(objects)
			for _, e := range ents {
				if len(e.Name()) == 2 {
					os.Remove(filepath.Join(objects, e.Name())) // fails unless empty
				}
			}
		}
	}()
	for i := range 60 {
		// Each append's objects go to new directories once the others
		// were emptied by a repack.
		if i%20 == 10 {
			tb.git(dir, "repack", "-adq")
			tb.git(dir, "prune-packed")
		}
		require.NoError(t, s.Append(ctx, userEntry("entry")), "append %d", i)
	}
	close(stop)
	<-done
	tb.git(dir, "fsck", "--strict")
	leftovers, _ := filepath.Glob(filepath.Join(objects, "*", "tmp_obj_*"))
	assert.Empty(t, leftovers)
}

func userTexts(t *testing.T, tb *testbed, st *Store, id string) []string {
	t.Helper()
	s, err := st.Open(ctx, id)
	require.NoError(t, err)
	var out []string
	for _, e := range s.Entries() {
		var d UserData
		if e.Type == TypeUser && e.Decode(&d) == nil {
			out = append(out, d.Text)
		}
	}
	return out
}

var _ = errors.Is

// Listing reads loose refs before packed-refs, as git does: `git
// pack-refs` writes packed-refs and then deletes the loose files, so a
// session being packed is always in one or the other. Read the other way
// round, 3-11% of listings missed a session while pack-refs ran.
func TestListingNeverMissesASessionDuringPackRefs(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	var sessions []*Session
	for range 40 {
		s, err := st.Create(ctx)
		require.NoError(t, err)
		appendN(t, s, 1, "x")
		sessions = append(sessions, s)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // loose refs again and again
		for {
			for _, s := range sessions {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Append(ctx, userEntry("y")); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			tb.git(dir, "pack-refs", "--all")
		}
	})
	// Sessions made in the same millisecond share their first 9 characters,
	// so each is resolved by its shortest prefix that no other one has.
	var ids []string
	for _, s := range sessions {
		ids = append(ids, s.ID())
	}
	prefixes := make([]string, len(ids))
	for i, id := range ids {
		prefixes[i] = id
		for n := 6; n < len(id); n++ {
			unique := true
			for j, other := range ids {
				if j != i && strings.HasPrefix(other, id[:n]) {
					unique = false
					break
				}
			}
			if unique {
				prefixes[i] = id[:n]
				break
			}
		}
	}
	listMisses, resolveMisses, listings := 0, 0, 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); listings++ {
		infos, err := st.List(ctx)
		require.NoError(t, err)
		if len(infos) != len(sessions) {
			listMisses++
		}
		i := listings % len(ids)
		if id, err := st.Resolve(ctx, prefixes[i]); err != nil || id != ids[i] {
			resolveMisses++
		}
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, listMisses, "%d of %d listings missed a session", listMisses, listings)
	assert.Zero(t, resolveMisses, "%d of %d prefix resolutions missed a session", resolveMisses, listings)
}
