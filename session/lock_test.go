package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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

// The test binary doubles as a writer process: with DECODE_SESSION_HELPER set
// it runs helperMain instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("DECODE_SESSION_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a writer process. Modes: "hold" locks the session, says
// "locked" and appends one entry when its stdin closes; "once" tries to lock
// and exits 6 on a conflict; "append" appends HELPER_N entries one by one,
// taking the lock for each and retrying while another process holds it.
func helperMain(mode string) int {
	env := Env{Getenv: os.Getenv, Home: os.Getenv("HOME")}
	st, err := OpenStore(os.Getenv("HELPER_DIR"), env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	id := os.Getenv("HELPER_SESSION")
	ctx := context.Background()
	switch mode {
	case "hold", "once":
		s, err := st.Open(ctx, id)
		if err == nil {
			err = s.Lock()
		}
		if errors.Is(err, ErrConflict) {
			fmt.Fprintln(os.Stderr, err)
			return 6
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("locked")
		if mode == "hold" {
			io.Copy(io.Discard, os.Stdin)
		}
		err = errors.Join(s.Append(ctx, userEntry(mode)), s.Unlock())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "append":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		conflicts := 0
		for i := 0; i < n; {
			err := appendLocked(ctx, st, id, fmt.Sprintf("%d-%d", os.Getpid(), i))
			if errors.Is(err, ErrConflict) {
				conflicts++
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			i++
		}
		fmt.Println(conflicts)
		return 0
	case "soak":
		return soakWriter(ctx, st, id)
	}
	return 2
}

func appendLocked(ctx context.Context, st *Store, id, text string) error {
	s, err := st.Open(ctx, id)
	if err != nil {
		return err
	}
	if os.Getenv("HELPER_NOLOCK") != "" {
		return s.Append(ctx, userEntry(text)) // only the ref's compare-and-swap guards this
	}
	if err := s.Lock(); err != nil {
		return err
	}
	return errors.Join(s.Append(ctx, userEntry(text)), s.Unlock())
}

func (tb *testbed) helper(mode, dir, id string, extra ...string) *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(tb.t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(tb.environ(), "DECODE_SESSION_HELPER="+mode, "HELPER_DIR="+dir, "HELPER_SESSION="+id)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func TestSecondWriterGetsConflict(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 1, "start")

	holder := tb.helper("hold", dir, s.ID())
	stdin, err := holder.StdinPipe()
	require.NoError(t, err)
	stdout, err := holder.StdoutPipe()
	require.NoError(t, err)
	var holderErr strings.Builder
	holder.Stderr = &holderErr
	require.NoError(t, holder.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "holder: %s", holderErr.String())
	require.Equal(t, "locked\n", line)

	second := tb.helper("once", dir, s.ID())
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "second writer: %s", out)
	assert.Equal(t, 6, exit.ExitCode(), "second writer: %s", out)
	assert.Contains(t, string(out), fmt.Sprintf("process %d", holder.Process.Pid), "the conflict names the owner")

	// In this process too.
	mine, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.ErrorIs(t, mine.Lock(), ErrConflict)

	require.NoError(t, stdin.Close())
	require.NoError(t, holder.Wait(), holderErr.String())
	require.NoError(t, mine.Lock(), "the lock is free once the holder is done")
	assert.Len(t, mine.Entries(), 2, "Lock reloads what the holder appended")
	assert.Empty(t, mine.Reclaimed())
	require.NoError(t, mine.Append(ctx, userEntry("mine")))
	require.NoError(t, mine.Unlock())
	_, err = os.Stat(filepath.Join(st.GitDir(), "decode", "locks", s.ID()+".lock"))
	assert.ErrorIs(t, err, os.ErrNotExist, "Unlock removes the lock file")
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	t.Run("with the writer lock", func(t *testing.T) { testConcurrentWriters(t) })
	t.Run("with compare-and-swap alone", func(t *testing.T) { testConcurrentWriters(t, "HELPER_NOLOCK=1") })
}

func testConcurrentWriters(t *testing.T, extra ...string) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 1, "start")

	const procs, each = 2, 15
	var wg sync.WaitGroup
	outs := make([]string, procs)
	errs := make([]error, procs)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := tb.helper("append", dir, s.ID(), append(extra, "HELPER_N="+strconv.Itoa(each))...).CombinedOutput()
			outs[p], errs[p] = string(out), err
		}()
	}
	wg.Wait()
	for p := range procs {
		require.NoError(t, errs[p], outs[p])
	}
	got, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	es := got.Entries()
	require.Len(t, es, 1+procs*each, "every append of both processes is there")
	seen := map[string]bool{}
	for i, e := range es {
		assert.Equal(t, i+1, e.ID)
		assert.Equal(t, i, e.Parent)
		var d UserData
		require.NoError(t, e.Decode(&d))
		assert.False(t, seen[d.Text], "entry %q written once", d.Text)
		seen[d.Text] = true
	}
	commits := tb.git(dir, "rev-list", "--count", sessionRef(s.ID()))
	assert.Equal(t, strconv.Itoa(1+procs*each), commits)
	t.Logf("conflicts met and retried per process: %q", outs)
}

func TestDeadOwnerLockIsReclaimed(t *testing.T) {
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	s, err := st.Create(ctx)
	require.NoError(t, err)

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	lockDir := filepath.Join(st.GitDir(), "decode", "locks")
	require.NoError(t, os.MkdirAll(lockDir, 0o755))
	body := lockOwner{pid: gone.Process.Pid, host: self().host}.body()
	require.NoError(t, os.WriteFile(filepath.Join(lockDir, s.ID()+".lock"), []byte(body), 0o644))

	require.NoError(t, s.Lock())
	assert.Contains(t, s.Reclaimed(), fmt.Sprintf("process %d", gone.Process.Pid))
	b, err := os.ReadFile(filepath.Join(lockDir, s.ID()+".lock"))
	require.NoError(t, err)
	assert.Equal(t, self().body(), string(b), "the lock now names this process")
	require.NoError(t, s.Unlock())

	// An owner on another host cannot be checked and is never reclaimed.
	other := lockOwner{pid: gone.Process.Pid, host: "elsewhere"}.body()
	require.NoError(t, os.WriteFile(filepath.Join(lockDir, s.ID()+".lock"), []byte(other), 0o644))
	err = s.Lock()
	assert.ErrorIs(t, err, ErrConflict)
	assert.ErrorContains(t, err, "on elsewhere")
}

// TestRunningSessionWithDeadWriterIsCrashed: a session left running by a
// process that is gone (kill -9, SIGPIPE) is listed as crashed; one whose
// writer lives stays running.
func TestRunningSessionWithDeadWriterIsCrashed(t *testing.T) {
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	s, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Lock())
	require.NoError(t, s.Append(ctx, NewEntry(TypeUser, UserData{Text: "go"}, "")))
	status := func() Status {
		infos, err := st.List(ctx)
		require.NoError(t, err)
		require.Len(t, infos, 1)
		return infos[0].Status
	}
	assert.Equal(t, StatusRunning, status(), "its writer is this live process")
	assert.Equal(t, WriterAlive, st.Writer(s.ID()))

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	body := lockOwner{pid: gone.Process.Pid, host: self().host}.body()
	require.NoError(t, os.WriteFile(st.lockFile(s.ID()), []byte(body), 0o644))
	assert.Equal(t, WriterDead, st.Writer(s.ID()))
	assert.Equal(t, StatusCrashed, status(), "a dead writer's session is crashed")
	again, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, StatusCrashed, again.Info().Status)

	require.NoError(t, os.Remove(st.lockFile(s.ID())))
	assert.Equal(t, WriterNone, st.Writer(s.ID()))
	assert.Equal(t, StatusCrashed, status(), "a running session with no writer at all is crashed too")

	other := lockOwner{pid: gone.Process.Pid, host: "elsewhere"}.body()
	require.NoError(t, os.WriteFile(st.lockFile(s.ID()), []byte(other), 0o644))
	assert.Equal(t, StatusRunning, status(), "a writer on another host cannot be checked")
}

// A reclaim guard left by a process killed while it reclaimed a lock is
// itself reclaimed: the next writer takes the session (it used to exit 6,
// the flake of TestKillAnywhereThenResume).
func TestDeadReclaimGuardIsReclaimed(t *testing.T) {
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 1, "one")

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	lock := st.lockFile(s.ID())
	require.NoError(t, os.MkdirAll(filepath.Dir(lock), 0o755))
	dead := lockOwner{pid: gone.Process.Pid, host: self().host}.body()
	require.NoError(t, os.WriteFile(lock, []byte(dead), 0o644))
	require.NoError(t, os.WriteFile(lock+".reclaim", []byte(dead), 0o644))

	require.NoError(t, s.Lock(), "a dead guard does not block the reclaim")
	assert.Contains(t, s.Reclaimed(), fmt.Sprintf("process %d", gone.Process.Pid))
	assert.NoFileExists(t, lock+".reclaim")
	require.NoError(t, s.Append(ctx, userEntry("two")))
	require.NoError(t, s.Unlock())
}

// A lock whose pid now belongs to an unrelated process (the kernel reuses
// pids) is told apart by the process start time recorded in the lock, and
// reclaimed; a live owner with the same start time is not.
func TestLockOfAReusedPidIsReclaimed(t *testing.T) {
	if _, ok := procStart(os.Getpid()); !ok {
		t.Skip("no /proc/PID/stat on this system")
	}
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	s, err := st.Create(ctx)
	require.NoError(t, err)

	other := exec.Command("sleep", "30") // stands for the process that got the pid
	require.NoError(t, other.Start())
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	start, ok := procStart(other.Process.Pid)
	require.True(t, ok)
	lock := st.lockFile(s.ID())
	require.NoError(t, os.MkdirAll(filepath.Dir(lock), 0o755))

	live := lockOwner{pid: other.Process.Pid, host: self().host, start: start}.body()
	require.NoError(t, os.WriteFile(lock, []byte(live), 0o644))
	err = s.Lock()
	require.ErrorIs(t, err, ErrConflict, "the owner is alive: same pid, same start time")
	assert.ErrorContains(t, err, fmt.Sprintf("process %d", other.Process.Pid))

	reused := lockOwner{pid: other.Process.Pid, host: self().host, start: "1"}.body()
	require.NoError(t, os.WriteFile(lock, []byte(reused), 0o644))
	require.NoError(t, s.Lock(), "the pid's process started later than the lock's owner: the owner is gone")
	assert.Contains(t, s.Reclaimed(), fmt.Sprintf("process %d", other.Process.Pid))
	b, err := os.ReadFile(lock)
	require.NoError(t, err)
	assert.Regexp(t, `^\d+ \S+ \d+\n$`, string(b), "the lock records this process's start time")
	require.NoError(t, s.Unlock())
}
