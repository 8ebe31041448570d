package agent

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// gitSession creates a session in a new repository made by the real git.
func gitSession(t *testing.T) (*session.Store, *session.Session) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git init: %s", out)
	env := session.Env{Getenv: func(k string) string {
		if k == "GIT_CEILING_DIRECTORIES" {
			return filepath.Dir(dir)
		}
		return ""
	}, Home: dir}
	st, err := session.OpenStore(dir, env)
	require.NoError(t, err)
	s, err := st.Create(context.Background())
	require.NoError(t, err)
	return st, s
}

// lockTool holds the session's <ref>.lock when it runs, as `git pack-refs`
// does for a moment while it prunes a loose ref; release, when positive,
// is how long it holds it.
type lockTool struct {
	path    string
	release time.Duration
	ran     int
}

func (l *lockTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "pack", Description: "fake", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (l *lockTool) ReadOnly() bool { return false }
func (l *lockTool) Run(context.Context, json.RawMessage) (tools.Result, error) {
	l.ran++
	if err := os.WriteFile(l.path, nil, 0o644); err != nil {
		return tools.Result{}, err
	}
	if l.release > 0 {
		time.AfterFunc(l.release, func() { os.Remove(l.path) })
	}
	return tools.Result{Content: "packed"}, nil
}

// checkPaired asserts that the stored session's ids run 1, 2, 3 ... and
// that every call of every assistant message has one tool_call entry at
// most and one result at most, a result never without its call.
func checkPaired(t *testing.T, st *session.Store, id string) []session.Entry {
	t.Helper()
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err)
	require.Empty(t, s.Problems())
	calls, results := map[string]int{}, map[string]int{}
	for i, e := range s.Entries() {
		assert.Equal(t, i+1, e.ID, "ids are consecutive: nothing was dropped")
		switch e.Type {
		case session.TypeToolCall:
			var d session.ToolCallData
			require.NoError(t, e.Decode(&d))
			calls[d.CallID]++
		case session.TypeToolResult:
			var d session.ToolResultData
			require.NoError(t, e.Decode(&d))
			results[d.CallID]++
			assert.Equal(t, 1, calls[d.CallID], "result of %s follows its call", d.CallID)
		}
	}
	for id, n := range calls {
		assert.Equal(t, 1, n, "call %s recorded once", id)
		assert.LessOrEqual(t, results[id], 1, "call %s has at most one result", id)
	}
	return s.Entries()
}

// A ref lock another process holds for a moment delays the append; the
// entries stay pending and are committed, and the run ends well with
// nothing missing (it used to drop them and exit 0).
func TestFlushKeepsEntriesWhileRefLockIsHeld(t *testing.T) {
	st, s := gitSession(t)
	pack := &lockTool{path: filepath.Join(st.GitDir(), filepath.FromSlash(s.Ref())) + ".lock", release: 400 * time.Millisecond}
	writer := &fakeTool{name: "write", out: "written"}
	m := &fakeModel{responses: []llm.Response{
		say("go", call("c1", "pack", `{}`), call("c2", "write", `{"path":"a"}`)),
		say("done"),
	}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(pack, writer), Gate: allowAll, Log: s}, "go")
	require.NoError(t, err)
	assert.Len(t, writer.ran, 1)
	es := checkPaired(t, st, s.ID())
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "tool_call", "tool_result", "assistant", "end"}, types(es))
}

// failOnce is a session whose append of a result and the next call fails
// once, as a full disk would, while the others go through.
type failOnce struct {
	*session.Session
	failed bool
}

func (f *failOnce) Append(ctx context.Context, es ...session.Entry) error {
	if !f.failed && len(es) == 2 && es[0].Type == session.TypeToolResult && es[1].Type == session.TypeToolCall {
		f.failed = true
		return &fs.PathError{Op: "write", Path: "objects/ab/tmp_obj_1", Err: syscall.ENOSPC}
	}
	return f.Session.Append(ctx, es...)
}

// A failure that cannot be retried stops the run before the next tool
// runs, and what was pending is committed by the final flush, not
// dropped; once the cause is gone, resume runs that tool once. (The loop
// used to drop the pending entries, mark the call "not run", commit its
// result without its call and finish with exit 0.)
func TestFlushFailureStopsBeforeTheNextTool(t *testing.T) {
	st, s := gitSession(t)
	first := &fakeTool{name: "first", out: "one"}
	writer := &fakeTool{name: "write", out: "written"}
	m := &fakeModel{responses: []llm.Response{
		say("go", call("c1", "first", `{}`), call("c2", "write", `{"path":"a"}`)),
		say("done"),
	}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(first, writer), Gate: allowAll, Log: &failOnce{Session: s}}, "go")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	assert.Empty(t, writer.ran, "the write did not run: its call could not be recorded")
	assert.Len(t, m.reqs, 1, "no further request")
	es := checkPaired(t, st, s.ID())
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "end"}, types(es), "the first call's result is kept")

	again, err := st.Open(context.Background(), s.ID())
	require.NoError(t, err)
	_, err = Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(first, writer), Gate: allowAll, Log: again}, "")
	require.NoError(t, err)
	assert.Len(t, writer.ran, 1, "resume ran the write once")
	assert.Len(t, first.ran, 1, "the first call is not run again")
	es = checkPaired(t, st, s.ID())
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type)
}
