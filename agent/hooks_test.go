package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// hookFixture is a directory with hook scripts and the file they log to.
type hookFixture struct {
	t   *testing.T
	dir string
}

func newHookFixture(t *testing.T) *hookFixture {
	return &hookFixture{t: t, dir: t.TempDir()}
}

// script writes an executable hook and returns the command line running it.
func (h *hookFixture) script(name, body string) string {
	p := filepath.Join(h.dir, name)
	require.NoError(h.t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// events returns the events the "record" hook saw, in order.
func (h *hookFixture) events() []HookEvent {
	data, err := os.ReadFile(filepath.Join(h.dir, "events.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(h.t, err)
	var out []HookEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev HookEvent
		require.NoError(h.t, json.Unmarshal([]byte(line), &ev), line)
		out = append(out, ev)
	}
	return out
}

func (h *hookFixture) record() string {
	return h.script("record", `cat >> "`+filepath.Join(h.dir, "events.jsonl")+`"; echo >> "`+filepath.Join(h.dir, "events.jsonl")+`"`)
}

func TestHookEventsInOrder(t *testing.T) {
	h := newHookFixture(t)
	rec := h.record()
	cmds := map[string][]string{}
	for _, ev := range HookEvents {
		cmds[ev] = []string{rec}
	}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "ls", `{"path":"."}`)), say("done")}}
	_, err := Run(context.Background(), Options{
		Model: m, Tools: tools.NewRegistry(&fakeTool{name: "ls", readOnly: true, out: "a.go"}), Gate: allowAll, Log: &MemoryLog{},
		Hooks: &Hooks{Commands: cmds, Dir: h.dir, Session: "s1"},
	}, "list")
	require.NoError(t, err)
	var names []string
	for _, ev := range h.events() {
		names = append(names, ev.Event)
		assert.Equal(t, "s1", ev.Session)
		assert.Equal(t, h.dir, ev.Cwd)
	}
	assert.Equal(t, []string{"run_start", "before_request", "before_tool", "after_tool", "before_request", "before_finish", "run_end"}, names)
	evs := h.events()
	assert.Equal(t, "list", evs[0].Prompt)
	assert.Equal(t, "ls", evs[2].Tool)
	assert.JSONEq(t, `{"path":"."}`, string(evs[2].Args))
	assert.Equal(t, "a.go", evs[3].Result)
	assert.Equal(t, "done", evs[5].Text)
	assert.Equal(t, "done", evs[6].Status)
}

func TestBeforeToolBlocks(t *testing.T) {
	h := newHookFixture(t)
	block := h.script("block", `grep -q '"rm' && { echo "no deleting here" >&2; exit 2; }; exit 0`)
	bash := &fakeTool{name: "bash"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "bash", `{"command":"rm -rf x"}`), call("c2", "bash", `{"command":"ls"}`)), say("ok")}}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(bash), Gate: allowAll, Log: log,
		Hooks: &Hooks{Commands: map[string][]string{HookBeforeTool: {block}}, Dir: h.dir}}, "go")
	require.NoError(t, err)
	assert.Equal(t, []string{`{"command":"ls"}`}, bash.ran, "the blocked call does not run")
	res := m.lastResults(t)
	assert.True(t, res[0].IsError)
	assert.Equal(t, "blocked by a before_tool hook: no deleting here", res[0].Content)
	var d session.ToolCallData
	for _, e := range log.Entries() {
		if e.Type == session.TypeToolCall {
			require.NoError(t, e.Decode(&d))
			break
		}
	}
	assert.Equal(t, "deny", d.Decision)
}

func TestBeforeToolRewritesArguments(t *testing.T) {
	h := newHookFixture(t)
	rewrite := h.script("rewrite", `cat >/dev/null; echo '{"command":"go test -count=1 ./..."}'`)
	bash := &fakeTool{name: "bash"}
	m := &turnModel{responses: []llm.Response{say("", call("c1", "bash", `{"command":"go test ./..."}`)), say("ok")}}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(bash), Gate: allowAll, Log: log,
		Hooks: &Hooks{Commands: map[string][]string{HookBeforeTool: {rewrite}}, Dir: h.dir}}, "go")
	require.NoError(t, err)
	assert.Equal(t, []string{`{"command":"go test -count=1 ./..."}`}, bash.ran)
	for _, e := range log.Entries() {
		if e.Type == session.TypeToolCall {
			var d session.ToolCallData
			require.NoError(t, e.Decode(&d))
			assert.JSONEq(t, `{"command":"go test -count=1 ./..."}`, string(d.Args), "the log records what ran")
			assert.Contains(t, d.Reason, "rewritten")
		}
	}
}

func TestBeforeToolFailureBlocksAndIsReported(t *testing.T) {
	h := newHookFixture(t)
	for name, body := range map[string]string{
		"crash":   `echo oops >&2; exit 1`,
		"garbage": `cat >/dev/null; echo not json`,
	} {
		t.Run(name, func(t *testing.T) {
			bash := &fakeTool{name: "bash"}
			m := &turnModel{responses: []llm.Response{say("", call("c1", "bash", `{"command":"ls"}`)), say("ok")}}
			var warnings []string
			log := &MemoryLog{}
			_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(bash), Gate: allowAll, Log: log,
				Hooks: &Hooks{Commands: map[string][]string{HookBeforeTool: {h.script(name, body)}}, Dir: h.dir},
				Sink: func(ev Event) {
					if ev.Type == EventWarning {
						warnings = append(warnings, ev.Text)
					}
				}}, "go")
			require.NoError(t, err)
			assert.Empty(t, bash.ran, "a broken policy hook lets nothing through")
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], "before_tool hook")
			assert.Contains(t, m.lastResults(t)[0].Content, "the call was not run")
			assert.Contains(t, types(log.Entries()), session.TypeError, "the failure is in the session")
		})
	}
}

func TestBeforeFinishSendsTheModelBack(t *testing.T) {
	h := newHookFixture(t)
	marker := filepath.Join(h.dir, "sent")
	back := h.script("back", `cat >/dev/null; [ -e "`+marker+`" ] && exit 0; touch "`+marker+`"; echo "run the tests first"`)
	m := &turnModel{responses: []llm.Response{say("done"), say("tests pass, done")}}
	out, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: &MemoryLog{},
		Hooks: &Hooks{Commands: map[string][]string{HookBeforeFinish: {back}}, Dir: h.dir}}, "go")
	require.NoError(t, err)
	assert.Equal(t, "tests pass, done", out.Text)
	require.Len(t, m.reqs, 2)
	msgs := m.reqs[1].Messages
	assert.Equal(t, "run the tests first", msgs[len(msgs)-1].Text)
}

func TestBeforeFinishExit2SendsStderrBack(t *testing.T) {
	h := newHookFixture(t)
	marker := filepath.Join(h.dir, "sent")
	back := h.script("back", `cat >/dev/null; [ -e "`+marker+`" ] && exit 0; touch "`+marker+`"; echo "not yet" >&2; exit 2`)
	m := &turnModel{responses: []llm.Response{say("done"), say("really done")}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: &MemoryLog{},
		Hooks: &Hooks{Commands: map[string][]string{HookBeforeFinish: {back}}, Dir: h.dir}}, "go")
	require.NoError(t, err)
	msgs := m.reqs[len(m.reqs)-1].Messages
	assert.Equal(t, "not yet", msgs[len(msgs)-1].Text)
}

func TestHookTimeoutIsReported(t *testing.T) {
	h := newHookFixture(t)
	slow := h.script("slow", `sleep 30`)
	var warnings []string
	log := &MemoryLog{}
	start := time.Now()
	_, err := Run(context.Background(), Options{Model: &turnModel{responses: []llm.Response{say("hi")}}, Tools: tools.NewRegistry(), Gate: allowAll, Log: log,
		Hooks: &Hooks{Commands: map[string][]string{HookRunStart: {slow}}, Dir: h.dir, Timeout: 50 * time.Millisecond},
		Sink: func(ev Event) {
			if ev.Type == EventWarning {
				warnings = append(warnings, ev.Text)
			}
		}}, "go")
	require.NoError(t, err, "an observing hook's failure does not stop the run")
	assert.Less(t, time.Since(start), 10*time.Second, "the hook was killed, not waited for")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "timed out")
	assert.Contains(t, types(log.Entries()), session.TypeError)
}

func TestHookSeesEnvironmentNotSecrets(t *testing.T) {
	h := newHookFixture(t)
	out := filepath.Join(h.dir, "env")
	dump := h.script("env", `cat >/dev/null; env > "`+out+`"`)
	_, err := Run(context.Background(), Options{Model: &turnModel{responses: []llm.Response{say("hi")}}, Tools: tools.NewRegistry(), Gate: allowAll, Log: &MemoryLog{},
		Hooks: &Hooks{Commands: map[string][]string{HookRunEnd: {dump}}, Dir: h.dir, Env: []string{"PATH=" + os.Getenv("PATH"), "ONLY=this"}, Session: "s9"}}, "go")
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	env := string(data)
	assert.Contains(t, env, "ONLY=this")
	assert.Contains(t, env, "DECODE_HOOK_EVENT=run_end")
	assert.Contains(t, env, "DECODE_SESSION=s9")
	assert.NotContains(t, env, "HOME=", "the hook gets the given environment only")
}
