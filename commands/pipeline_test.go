package commands

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The tests of this file's kind run the decode binary (the test binary,
// which testscript.Main puts on PATH as decode) in a temporary repository,
// as a pipeline would, where in-process calls cannot show what a separate
// process prints.

// testRepo makes a git repository with a hermetic home and the files given
// as name, content pairs.
func testRepo(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.Zero(t, len(files)%2, "files come in name, content pairs")
	for i := 0; i < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(files[i+1]), 0o644))
	}
	gitIn(t, dir, "init", "-q")
	return dir
}

// decodeEnv is a hermetic environment for processes started in dir: no
// API keys, no user config, a fixed git identity.
func decodeEnv(dir string, extra ...string) []string {
	home := filepath.Join(dir, ".home")
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
	}, extra...)
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = decodeEnv(dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// decodeRun runs decode in dir and returns its stdout, stderr and exit code.
func decodeRun(t *testing.T, dir string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "testscript.Main puts decode on PATH")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file (refresh with go test -run %s -update)", t.Name())
	require.Equal(t, string(want), got, "output differs from %s (refresh with -update if the change is meant)", path)
}

// TestStdinWaitHint: a pipe that sends nothing (sleep 100 | decode ask x)
// gets a line on stderr that says what decode waits for and how not to.
func TestStdinWaitHint(t *testing.T) {
	old := stdinWaitHint
	stdinWaitHint = 10 * time.Millisecond
	defer func() { stdinWaitHint = old }()
	pr, pw := io.Pipe()
	var errb lockedBuffer
	done := make(chan string)
	go func() {
		p, _ := readPrompt(&IOStreams{In: pr, InPiped: true, Err: &errb}, "x", 0)
		done <- p
	}()
	time.Sleep(200 * time.Millisecond)
	pw.Write([]byte("late"))
	pw.Close()
	assert.Equal(t, "x\n\n<stdin>\nlate\n</stdin>", <-done)
	assert.Equal(t, "decode: waiting for stdin, which is attached to the prompt; pass --no-stdin or </dev/null not to read it\n", errb.String())

	errb.Reset()
	p, err := readPrompt(&IOStreams{In: strings.NewReader("now"), InPiped: true, Err: &errb}, "x", 0)
	require.NoError(t, err)
	assert.Contains(t, p, "now")
	time.Sleep(50 * time.Millisecond)
	assert.Empty(t, errb.String(), "input that arrives at once gets no note")
}

// lockedBuffer is a buffer safe to write from one goroutine and read from
// another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}
