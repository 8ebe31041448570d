package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soakWriter is a writer process of TestSoakBesideGitMaintenance: it locks
// the session and appends batches of one to three entries until
// HELPER_UNTIL (unix milliseconds), printing "ok TEXT" for each entry of a
// batch once Append returned nil. A failure that may pass is retried as
// the loop retries it; any other ends the process with exit 1.
func soakWriter(ctx context.Context, st *Store, id string) int {
	until, _ := strconv.ParseInt(os.Getenv("HELPER_UNTIL"), 10, 64)
	s, err := st.Open(ctx, id)
	if err == nil {
		err = s.Lock()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Unlock()
	pad := strings.Repeat("x", 1500) // chunks fill and roll over
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i := 0; time.Now().UnixMilli() < until; i++ {
		var batch []Entry
		var texts []string
		for j := range 1 + i%3 {
			text := fmt.Sprintf("%d-%d-%d", os.Getpid(), i, j)
			texts = append(texts, text)
			batch = append(batch, userEntry(text+" "+pad))
		}
		for attempt := 0; ; attempt++ {
			err := s.Append(ctx, batch...)
			if err == nil {
				break
			}
			if !Retryable(err) || attempt >= 8 {
				fmt.Fprintf(os.Stderr, "append %d: %v\n", i, err)
				return 1
			}
			fmt.Fprintf(os.Stderr, "retrying append %d: %v\n", i, err)
			time.Sleep(time.Duration(50<<min(attempt, 4)) * time.Millisecond)
		}
		for _, t := range texts {
			fmt.Fprintln(out, "ok", t)
		}
		time.Sleep(5 * time.Millisecond) // a busy session, faster than any model
	}
	return 0
}

// soakDuration is how long the soak runs: 60 s in CI (CI set), 15 s
// otherwise, 4 s with -short; DECODE_SOAK (a duration) overrides.
func soakDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DECODE_SOAK")); err == nil {
		return d
	}
	switch {
	case testing.Short():
		return 4 * time.Second
	case os.Getenv("CI") != "":
		return 60 * time.Second
	}
	return 15 * time.Second
}

// TestSoakBesideGitMaintenance runs 8 writer processes, one session each,
// while a loop runs what the user's git does beside decode: gc, gc --auto,
// pack-refs --all, prune --expire=now, repack -ad and a fetch into
// refs/decode/. Meanwhile the sessions are listed over and over, and each
// listing must show all 8. At the end every session holds exactly the
// entries its process reported committed, in order, and git fsck --strict
// is clean.
func TestSoakBesideGitMaintenance(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	other := tb.repo() // a repository to fetch from
	tb.git(dir, "config", "gc.auto", "50")
	tb.git(dir, "config", "gc.autoPackLimit", "2")
	tb.git(dir, "config", "gc.autoDetach", "false")
	st := tb.store(dir)
	const writers = 8
	var ids []string
	for range writers {
		s, err := st.Create(ctx)
		require.NoError(t, err)
		appendN(t, s, 1, "start")
		ids = append(ids, s.ID())
	}
	d := soakDuration()
	until := time.Now().Add(d)
	t.Logf("soak for %s", d)

	procs := make([]*exec.Cmd, writers)
	outs := make([]*strings.Builder, writers)
	errs := make([]*strings.Builder, writers)
	for i, id := range ids {
		cmd := tb.helper("soak", dir, id, "HELPER_UNTIL="+strconv.FormatInt(until.UnixMilli(), 10))
		outs[i], errs[i] = &strings.Builder{}, &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		require.NoError(t, cmd.Start())
		procs[i] = cmd
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	fetch := []string{"fetch", "-q", other, "+refs/heads/*:refs/decode/fetched/*"}
	maintenance := [][]string{
		{"pack-refs", "--all"}, {"prune", "--expire=now"}, {"repack", "-adq"},
		{"pack-refs", "--all"}, {"prune", "--expire=now"}, {"gc", "--auto", "--quiet"},
		{"pack-refs", "--all"}, {"prune", "--expire=now"}, {"gc", "--quiet"}, fetch,
	}
	if only := os.Getenv("DECODE_SOAK_GIT"); only != "" {
		maintenance = [][]string{strings.Fields(only)}
	}
	runs, refused := map[string]int{}, 0
	// git stops a moment before the writers: a prune still running after
	// a writer's last append could remove that append's objects, and no
	// process would be left to restore them (see objectDB.repair).
	quiet := until.Add(-time.Second)
	wg.Go(func() {
		for i := 0; time.Now().Before(quiet); i++ {
			select {
			case <-stop:
				return
			default:
			}
			args := maintenance[i%len(maintenance)]
			out, err := tb.gitErr(dir, "", args...)
			switch {
			case err == nil, strings.Contains(out, "is already running"):
			case transientGitFailure(out):
				// git refused to go on: an object a writer committed was
				// removed by the previous prune, and not yet restored.
				refused++
			default:
				t.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
			}
			runs[strings.Join(args[:min(2, len(args))], " ")]++
		}
	})
	listings, misses, damaged := 0, 0, 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			infos, err := st.List(context.Background())
			if err != nil {
				t.Errorf("list: %v", err)
				return
			}
			listings++
			found := 0
			for _, in := range infos {
				if in.Damage != "" {
					damaged++ // a tip a prune removed, until its writer restores it
				}
				for _, id := range ids {
					if in.ID == id {
						found++
					}
				}
			}
			if found != writers {
				misses++
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	for i, cmd := range procs {
		err := cmd.Wait()
		assert.NoError(t, err, "writer %d: %s", i, errs[i])
	}
	close(stop)
	wg.Wait()
	t.Logf("maintenance runs: %v (%d refused for a missing object); %d listings, %d sessions seen damaged for a moment", runs, refused, listings, damaged)
	assert.Zero(t, misses, "every listing showed every session (%d of %d missed one)", misses, listings)

	total := 0
	for i, id := range ids {
		var reported []string
		for _, line := range strings.Split(strings.TrimSpace(outs[i].String()), "\n") {
			if text, ok := strings.CutPrefix(line, "ok "); ok {
				reported = append(reported, text)
			}
		}
		s, err := tb.store(dir).Open(ctx, id)
		require.NoError(t, err)
		assert.Empty(t, s.Problems(), "session %d reads back whole", i)
		var stored []string
		for _, text := range userTexts(t, tb, tb.store(dir), id)[1:] {
			stored = append(stored, strings.Fields(text)[0])
		}
		assert.Equal(t, reported, stored, "session %d holds exactly what its process committed", i)
		assert.NotEmpty(t, reported, "writer %d committed something", i)
		total += len(reported)
	}
	t.Logf("%d entries committed by %d processes", total, writers)
	out, err := tb.gitErr(dir, "", "fsck", "--strict", "--no-dangling")
	assert.NoError(t, err, "git fsck --strict: %s", out)
	leftovers, _ := filepath.Glob(filepath.Join(st.GitDir(), "objects", "*", "tmp_obj_*"))
	assert.Empty(t, leftovers, "no temporary object is left")
	var locks []string
	filepath.Walk(filepath.Join(st.GitDir(), "decode"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			locks = append(locks, p)
		}
		return nil
	})
	assert.Empty(t, locks, "no lock or temporary lock file is left")
}

// transientGitFailure reports git refusing to work on a repository where
// an object a ref names is missing, which a prune --expire=now racing a
// writer causes until the writer restores it.
func transientGitFailure(out string) bool {
	for _, s := range []string{"unable to parse object", "Could not read", "bad tree object", "bad object", "Failed to traverse parents", "missing blob", "missing tree", "unable to read"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

var _ = errors.New
