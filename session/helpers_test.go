package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testbed is a hermetic environment for the store and for the real git binary.
type testbed struct {
	t    testing.TB
	home string
	vars map[string]string
}

func newTestbed(t testing.TB) *testbed {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	home := t.TempDir()
	return &testbed{t: t, home: home, vars: map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"XDG_STATE_HOME":      filepath.Join(home, ".state"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
	}}
}

// env is what the store sees.
func (tb *testbed) env() Env {
	return Env{Getenv: func(k string) string { return tb.vars[k] }, Home: tb.home}
}

// environ is what git and helper processes see: no GIT_* variable of the
// developer's, only ours.
func (tb *testbed) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || strings.HasPrefix(k, "DECODE_") {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range tb.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// git runs git in dir and returns its trimmed stdout.
func (tb *testbed) git(dir string, args ...string) string {
	tb.t.Helper()
	out, err := tb.gitErr(dir, "", args...)
	require.NoError(tb.t, err, "git %s: %s", strings.Join(args, " "), out)
	return out
}

func (tb *testbed) gitIn(dir, stdin string, args ...string) string {
	tb.t.Helper()
	out, err := tb.gitErr(dir, stdin, args...)
	require.NoError(tb.t, err, "git %s: %s", strings.Join(args, " "), out)
	return out
}

func (tb *testbed) gitErr(dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = tb.environ()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return strings.TrimRight(string(out), "\n"), err
}

// repo makes a repository with one commit and returns its work tree.
func (tb *testbed) repo() string {
	tb.t.Helper()
	dir := filepath.Join(tb.t.TempDir(), "repo")
	require.NoError(tb.t, os.MkdirAll(dir, 0o755))
	tb.git(dir, "init", "-q", "-b", "main")
	require.NoError(tb.t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	tb.git(dir, "add", "main.go")
	tb.git(dir, "commit", "-q", "-m", "initial")
	return dir
}

func (tb *testbed) store(dir string) *Store {
	tb.t.Helper()
	s, err := OpenStore(dir, tb.env())
	require.NoError(tb.t, err)
	return s
}

// fakeClock returns a clock starting at start and moving step per call.
func fakeClock(start time.Time, step time.Duration) func() time.Time {
	t := start
	return func() time.Time {
		now := t
		t = t.Add(step)
		return now
	}
}

func userEntry(text string) Entry { return NewEntry(TypeUser, UserData{Text: text}, "") }

// appendN appends n user entries, one commit each.
func appendN(t testing.TB, s *Session, n int, text string) {
	t.Helper()
	for i := 0; i < n; i++ {
		require.NoError(t, s.Append(context.Background(), userEntry(text)))
	}
}

func sessionRef(id string) string { return refPrefix + id }
