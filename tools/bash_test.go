//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testEnv is a small scrubbed environment for commands in tests.
func testEnv(extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}, extra...)
}

func newTestBash(t *testing.T, o BashOptions) *Bash {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	if o.Env == nil {
		o.Env = testEnv()
	}
	b := NewBash(o)
	b.killGrace = 200 * time.Millisecond
	return b
}

func runBash(t *testing.T, ctx context.Context, b *Bash, command string, timeoutMS int) Result {
	t.Helper()
	args := map[string]any{"command": command}
	if timeoutMS > 0 {
		args["timeout_ms"] = timeoutMS
	}
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := b.Run(ctx, raw)
	require.NoError(t, err, command)
	return res
}

func TestBashSpec(t *testing.T) {
	b := NewBash(BashOptions{Dir: t.TempDir()})
	spec := b.Spec()
	assert.Equal(t, "bash", spec.Name)
	assert.False(t, b.ReadOnly())
	assert.Contains(t, spec.Description, "directory persists", "the model learns that cd sticks")
	var schema map[string]any
	require.NoError(t, json.Unmarshal(spec.Schema, &schema), "the schema is JSON")
	assert.Equal(t, []any{"command"}, schema["required"])
	assert.Contains(t, schema["properties"], "timeout_ms")
}

func TestBashOutputAndExitStatus(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	res := runBash(t, context.Background(), b, "echo out; echo err >&2", 0)
	assert.Equal(t, "out\nerr", res.Content, "stdout and stderr are combined")
	assert.False(t, res.IsError)

	res = runBash(t, context.Background(), b, "echo before; exit 3", 0)
	assert.False(t, res.IsError, "a failing command is not a tool error")
	assert.Equal(t, "before\nexit status 3", res.Content)
	assert.Contains(t, res.Note, "exit status 3")

	res = runBash(t, context.Background(), b, "true", 0)
	assert.Equal(t, "(no output)", res.Content)

	res = runBash(t, context.Background(), b, "kill -9 $$", 0)
	assert.Contains(t, res.Content, "signal: killed")

	res = runBash(t, context.Background(), b, "read x; echo \"read=$?\"; cat; echo done", 0)
	assert.Equal(t, "read=1\ndone", res.Content, "stdin is empty")

	res = runBash(t, context.Background(), b, "printf '\\xff\\xfeok'", 0)
	assert.Equal(t, "\uFFFDok", res.Content, "invalid UTF-8 is replaced")
}

func TestBashBadArguments(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	for _, raw := range []string{`{"command":"  "}`, `{"command":"a\u0000b"}`, `{"command":"x","timeout_ms":-1}`, `{"command":`} {
		res, err := b.Run(context.Background(), json.RawMessage(raw))
		require.NoError(t, err)
		assert.True(t, res.IsError, raw)
	}
}

func TestBashCapsOutputAndSavesIt(t *testing.T) {
	tmp := t.TempDir()
	b := newTestBash(t, BashOptions{TempDir: tmp})
	res := runBash(t, context.Background(), b, "seq 1 5000", 0)
	path := savedPath(t, res.Content)
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 5000, strings.Count(string(full), "\n"), "the saved file holds the whole output")
	assert.True(t, strings.HasPrefix(string(full), "1\n2\n"))
	assert.Equal(t, tmp, filepath.Dir(path), "the file is in TempDir")
	lines := strings.Split(res.Content, "\n")
	assert.Equal(t, "3001", lines[1], "the tail is kept")
	assert.Equal(t, "5000", lines[len(lines)-1])
	assert.Len(t, lines, 1+bashMaxLines)
	assert.Contains(t, lines[0], "last 2000 of 5000 lines")

	small := newTestBash(t, BashOptions{MaxLines: 100, MaxBytes: 1000})
	res = runBash(t, context.Background(), small, "head -c 5000 /dev/zero | tr '\\0' a; echo; echo end", 0)
	assert.LessOrEqual(t, len(res.Content), 1000+300, "the byte cap holds for one long line")
	assert.True(t, strings.HasSuffix(res.Content, "\nend"))
	full, err = os.ReadFile(savedPath(t, res.Content))
	require.NoError(t, err)
	assert.Len(t, full, 5000+1+4)

	res = runBash(t, context.Background(), small, "seq 1 100", 0)
	assert.NotContains(t, res.Content, "output cut", "exactly at the limit nothing is cut")
}

var savedRe = regexp.MustCompile(`the full output is in (\S+)\]`)

func savedPath(t *testing.T, content string) string {
	t.Helper()
	m := savedRe.FindStringSubmatch(content)
	require.NotNil(t, m, "the result names the saved file: %.300s", content)
	return m[1]
}

func TestBashKeepsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	b := newTestBash(t, BashOptions{Dir: dir})

	runBash(t, context.Background(), b, "cd sub", 0)
	res := runBash(t, context.Background(), b, "pwd", 0)
	assert.Equal(t, filepath.Join(real, "sub"), res.Content)
	runBash(t, context.Background(), b, "cd deeper && false", 0)
	res = runBash(t, context.Background(), b, "pwd", 0)
	assert.Equal(t, filepath.Join(real, "sub", "deeper"), res.Content, "the directory sticks even when the command fails")
	runBash(t, context.Background(), b, "(cd ..)", 0)
	assert.Equal(t, filepath.Join(real, "sub", "deeper"), runBash(t, context.Background(), b, "pwd", 0).Content, "a subshell's cd does not stick")

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "sub")))
	res = runBash(t, context.Background(), b, "pwd", 0)
	assert.Contains(t, res.Content, "no longer exists")
	assert.True(t, strings.HasSuffix(res.Content, "\n"+dir) || strings.HasSuffix(res.Content, "\n"+real), res.Content)

	other := newTestBash(t, BashOptions{Dir: dir})
	assert.Contains(t, []string{dir, real}, runBash(t, context.Background(), other, "pwd", 0).Content, "each instance has its own directory")
}

func TestBashEnvironmentIsExactlyGiven(t *testing.T) {
	t.Setenv("DECODE_TEST_LEAK", "leaked")
	env := ScrubEnv(append(testEnv(), "FAKE_API_KEY=secret-value", "VISIBLE=yes"), nil)
	b := newTestBash(t, BashOptions{Env: env})
	res := runBash(t, context.Background(), b, `echo "key=${FAKE_API_KEY:-unset} leak=${DECODE_TEST_LEAK:-unset} visible=$VISIBLE"`, 0)
	assert.Equal(t, "key=unset leak=unset visible=yes", res.Content)

	empty := newTestBash(t, BashOptions{Env: []string{}})
	res = runBash(t, context.Background(), empty, `echo "leak=${DECODE_TEST_LEAK:-unset}"`, 0)
	assert.Equal(t, "leak=unset", res.Content, "an empty environment is not the parent's")
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	b := newTestBash(t, BashOptions{Dir: dir})
	// The child ignores SIGTERM and would outlive the shell: only SIGKILL
	// to the whole group stops it.
	res := runBash(t, context.Background(), b, "echo started; (trap '' TERM; exec sleep 60) & echo $! > child.pid; wait", 300)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "timed out after 300ms")
	assert.Contains(t, res.Content, "started", "output before the timeout is kept")
	assertProcessGone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

func TestBashCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	b := newTestBash(t, BashOptions{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	marker := filepath.Join(dir, "child.pid")
	go func() {
		for range 500 {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := runBash(t, ctx, b, "sleep 60 & echo $! > child.pid.tmp && mv child.pid.tmp child.pid; wait", 0)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "interrupted")
	assertProcessGone(t, readPid(t, marker))
}

func TestBashBackgroundProcessDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	b := newTestBash(t, BashOptions{Dir: dir})
	res := runBash(t, context.Background(), b, "sleep 30 & echo $! > bg.pid; echo main", 0)
	pid := readPid(t, filepath.Join(dir, "bg.pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	assert.False(t, res.IsError)
	assert.True(t, strings.HasPrefix(res.Content, "main\n"), res.Content)
	assert.Contains(t, res.Content, "background processes kept the output open")
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	return pid
}

// assertProcessGone waits for pid to be dead: gone, or a zombie waiting to
// be reaped by init.
func assertProcessGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	for range 500 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if _, rest, ok := strings.Cut(string(data), ") "); ok && strings.HasPrefix(rest, "Z") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d survived", pid)
}

func TestBashTimeoutLimitsAndCancelledContext(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	res, err := b.Run(context.Background(), json.RawMessage(`{"command":"echo ok","timeout_ms":9223372036854775807}`))
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Content, "a huge timeout is capped, not overflowed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = runBash(t, ctx, b, "echo never", 0)
	assert.True(t, res.IsError)
	assert.NotContains(t, res.Content, "never")
}

func TestBashConcurrentCalls(t *testing.T) {
	b := newTestBash(t, BashOptions{})
	done := make(chan Result, 4)
	for i := range 4 {
		go func() {
			raw, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("echo %d", i)})
			res, _ := b.Run(context.Background(), raw)
			done <- res
		}()
	}
	var got []string
	for range 4 {
		got = append(got, (<-done).Content)
	}
	assert.ElementsMatch(t, []string{"0", "1", "2", "3"}, got)
}

func TestBashTempDirMadeWhenNeeded(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "decode-run")
	b := newTestBash(t, BashOptions{TempDir: tmp, MaxLines: 5})
	res := runBash(t, context.Background(), b, "echo short", 0)
	require.False(t, res.IsError, res.Content)
	assert.NoDirExists(t, tmp, "no directory until an output overflows")
	res = runBash(t, context.Background(), b, "seq 1 100", 0)
	require.False(t, res.IsError, res.Content)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err, "the directory is made for the first full output")
	assert.Len(t, entries, 1)
	fi, err := os.Stat(tmp)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "outputs may hold secrets: the directory is private")
}

func TestBashDirFollowsCd(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	b := newTestBash(t, BashOptions{Dir: dir})
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	runBash(t, context.Background(), b, "cd sub", 0)
	assert.Equal(t, filepath.Join(real, "sub"), b.Dir(), "the gate sees where the next command starts")
}
