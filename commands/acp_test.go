package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

	"decode/session"
)

// acpClient is a client written against the protocol: it writes requests
// on decode acp's stdin and reads its stdout line by line, answering
// permission requests with answer.
type acpClient struct {
	t      *testing.T
	in     *io.PipeWriter
	wmu    sync.Mutex
	msgs   chan map[string]any
	lines  []string
	lmu    sync.Mutex
	exit   chan struct{} // closed when Main returned, with code
	code   int
	stderr *syncBuffer
	nextID int
	// answer picks the permission option; nil leaves requests unanswered.
	answer func(params map[string]any) map[string]any
	asked  chan map[string]any
	// fs answers the agent's fs/* requests (result, or nil for an error);
	// nil leaves them to msgs.
	fs func(method string, params map[string]any) any
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// acpRepo makes a git repository with greeting.txt and a script file.
func acpRepo(t *testing.T, script string) (dir string, env map[string]string) {
	t.Helper()
	dir = t.TempDir()
	home := filepath.Join(dir, ".home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	env = map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".state"),
		"GIT_CONFIG_NOSYSTEM": "1", "PATH": os.Getenv("PATH"),
	}
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = dir
	require.NoError(t, cmd.Run(), "git init")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("Hello, wrold!\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o644))
	return dir, env
}

func startACP(t *testing.T, dir string, env map[string]string, args ...string) *acpClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &acpClient{t: t, in: inW, msgs: make(chan map[string]any, 1000), exit: make(chan struct{}),
		stderr: &syncBuffer{}, asked: make(chan map[string]any, 10)}
	f := &Factory{
		Version: "test",
		IO:      &IOStreams{In: inR, Out: outW, Err: c.stderr},
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string {
			var out []string
			for k, v := range env {
				out = append(out, k+"="+v)
			}
			return out
		},
		Getwd: func() (string, error) { return dir, nil },
	}
	go func() {
		c.code = Main(append([]string{"decode", "acp"}, args...), f)
		outW.Close()
		close(c.exit)
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			c.lmu.Lock()
			c.lines = append(c.lines, line)
			c.lmu.Unlock()
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("decode acp wrote a line that is not JSON: %q", line)
				continue
			}
			if method, _ := m["method"].(string); strings.HasPrefix(method, "fs/") && c.fs != nil {
				params, _ := m["params"].(map[string]any)
				if r := c.fs(method, params); r != nil {
					c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": r})
				} else {
					c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32603, "message": "no buffer"}})
				}
				continue
			}
			if m["method"] == "session/request_permission" {
				params, _ := m["params"].(map[string]any)
				c.asked <- params
				if c.answer != nil {
					c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"outcome": c.answer(params)}})
				} else {
					c.msgs <- m
				}
				continue
			}
			c.msgs <- m
		}
		close(c.msgs)
	}()
	t.Cleanup(func() {
		c.in.Close()
		select {
		case <-c.exit:
		case <-time.After(30 * time.Second):
			t.Errorf("decode acp did not exit after stdin closed")
		}
	})
	return c
}

func (c *acpClient) send(m map[string]any) {
	data, err := json.Marshal(m)
	require.NoError(c.t, err)
	c.raw(string(data) + "\n")
}

func (c *acpClient) raw(s string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := io.WriteString(c.in, s)
	require.NoError(c.t, err)
}

// start sends a request and returns its id.
func (c *acpClient) start(method string, params any) string {
	c.nextID++
	id := fmt.Sprint(c.nextID)
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	return id
}

// wait reads until the response to id, returning it and the
// notifications read on the way.
func (c *acpClient) wait(id string) (resp map[string]any, updates []map[string]any) {
	c.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("decode acp closed stdout before answering request %s; stderr:\n%s", id, c.stderr.String())
			}
			if m["method"] == "session/update" {
				p := m["params"].(map[string]any)
				u := p["update"].(map[string]any)
				u["_session"] = p["sessionId"]
				updates = append(updates, u)
				continue
			}
			if m["method"] == nil && fmt.Sprint(m["id"]) == id {
				return m, updates
			}
		case <-timeout:
			c.t.Fatalf("no answer to request %s; stderr:\n%s", id, c.stderr.String())
		}
	}
}

func (c *acpClient) request(method string, params any) (map[string]any, []map[string]any) {
	c.t.Helper()
	return c.wait(c.start(method, params))
}

func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	require.Nil(t, resp["error"], "the request failed")
	r, _ := resp["result"].(map[string]any)
	return r
}

func kinds(us []map[string]any) []string {
	var out []string
	for _, u := range us {
		k := u["sessionUpdate"].(string)
		if s, ok := u["status"].(string); ok {
			k += ":" + s
		}
		out = append(out, k)
	}
	return out
}

const acpEditScript = `{"responses": [
  {"text": "Looking.", "calls": [{"name": "todo", "args": {"todos": [{"content": "fix the typo", "status": "in_progress"}]}}, {"name": "read", "args": {"path": "greeting.txt"}}]},
  {"calls": [{"name": "edit", "args": {"path": "greeting.txt", "old_string": "Hello, wrold", "new_string": "Hello, world"}}]},
  {"text": "Fixed the typo."}
]}`

func TestACPPromptAsksAndEdits(t *testing.T) {
	dir, env := acpRepo(t, acpEditScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"), "--sandbox", "off")
	c.answer = func(map[string]any) map[string]any {
		return map[string]any{"outcome": "selected", "optionId": "allow_once"}
	}

	init := result(t, first(c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})))
	assert.EqualValues(t, 1, init["protocolVersion"])
	caps := init["agentCapabilities"].(map[string]any)
	assert.Equal(t, true, caps["loadSession"], "session/load is offered")

	ns := result(t, first(c.request("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))
	id := ns["sessionId"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, "default", ns["modes"].(map[string]any)["currentModeId"])

	resp, updates := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix the typo in greeting.txt"}}})
	assert.Equal(t, "end_turn", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	ks := kinds(updates)
	assert.Contains(t, ks, "agent_message_chunk")
	assert.Contains(t, ks, "plan", "the todo list is sent as a plan")
	assert.Contains(t, ks, "tool_call:pending", "the edit is announced before the permission request")
	assert.Contains(t, ks, "tool_call_update:completed")

	asked := <-c.asked
	tc := asked["toolCall"].(map[string]any)
	assert.Equal(t, "edit", tc["kind"])
	assert.Len(t, asked["options"], 3)

	var diff map[string]any
	for _, u := range updates {
		if cs, ok := u["content"].([]any); ok {
			for _, x := range cs {
				if m := x.(map[string]any); m["type"] == "diff" {
					diff = m
				}
			}
		}
	}
	require.NotNil(t, diff, "the edit's update carries a diff; updates: %v", ks)
	assert.Equal(t, "Hello, wrold!\n", diff["oldText"])
	assert.Equal(t, "Hello, world!\n", diff["newText"])
	assert.Equal(t, filepath.Join(dir, "greeting.txt"), diff["path"])
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	assert.Equal(t, "Hello, world!\n", string(data))

	// The session is an ordinary decode session: recorded, ended, unlocked.
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err)
	var types []string
	for _, e := range s.Entries() {
		types = append(types, e.Type)
	}
	assert.Equal(t, session.TypeStart, types[0])
	assert.Contains(t, types, session.TypeToolCall)
	assert.Equal(t, session.TypeEnd, types[len(types)-1])
	require.NoError(t, s.Lock(), "the session lock is released after the prompt")
	require.NoError(t, s.Unlock())

	// session/list shows it; session/load streams its history back.
	list := result(t, first(c.request("session/list", map[string]any{"cwd": dir})))
	assert.Contains(t, fmt.Sprint(list["sessions"]), id)
	resp, history := c.request("session/load", map[string]any{"sessionId": id, "cwd": dir, "mcpServers": []any{}})
	result(t, resp)
	hk := kinds(history)
	assert.Equal(t, "user_message_chunk", hk[0])
	assert.Contains(t, hk, "tool_call:pending")
	assert.Contains(t, hk, "tool_call_update:completed")
	assert.Contains(t, hk, "plan")
}

func first(resp map[string]any, _ []map[string]any) map[string]any { return resp }

func TestACPFraming(t *testing.T) {
	dir, env := acpRepo(t, `{"responses": [{"text": "one\u2028two\u2029three"}]}`)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))

	// Malformed JSON: a parse error with a null id, and the server carries on.
	c.raw("{not json\n")
	m := <-c.msgs
	assert.EqualValues(t, rpcParseError, m["error"].(map[string]any)["code"])
	assert.Nil(t, m["id"])
	// Not JSON-RPC: invalid request, answered with its id.
	c.raw(`{"id": 7, "method": "initialize"}` + "\n")
	m = <-c.msgs
	assert.EqualValues(t, rpcInvalidRequest, m["error"].(map[string]any)["code"])
	assert.EqualValues(t, 7, m["id"])
	// An unknown method.
	resp, _ := c.request("no/such", map[string]any{})
	assert.EqualValues(t, rpcMethodNotFound, resp["error"].(map[string]any)["code"])

	// CRLF line ends, and a raw U+2028 inside a string, are one message.
	c.nextID++
	c.raw(fmt.Sprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/new\",\"params\":{\"cwd\":%q,\"_meta\":{\"note\":\"a\u2028b\"}}}\r\n", c.nextID, dir))
	resp, _ = c.wait(fmt.Sprint(c.nextID))
	id := result(t, resp)["sessionId"].(string)

	resp, updates := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "say it"}}})
	assert.Equal(t, "end_turn", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	var text string
	for _, u := range updates {
		if u["sessionUpdate"] == "agent_message_chunk" {
			text += u["content"].(map[string]any)["text"].(string)
		}
	}
	assert.Equal(t, "one\u2028two\u2029three", text)
	c.lmu.Lock()
	for _, l := range c.lines {
		assert.NotContains(t, l, "\u2028", "a raw line separator on stdout would split the message for some readers")
	}
	c.lmu.Unlock()

	// Invalid params and an unknown session are errors, not crashes.
	resp, _ = c.request("session/new", map[string]any{"cwd": "relative/dir"})
	assert.EqualValues(t, rpcInvalidParams, resp["error"].(map[string]any)["code"])
	resp, _ = c.request("session/prompt", map[string]any{"sessionId": "nope", "prompt": []any{}})
	assert.EqualValues(t, rpcInvalidParams, resp["error"].(map[string]any)["code"])
}

const acpAskScript = `{"responses": [
  {"text": "Editing.", "calls": [{"name": "edit", "args": {"path": "greeting.txt", "old_string": "Hello, wrold", "new_string": "Hello, world"}}]},
  {"text": "Done."}
]}`

func TestACPCancelAtPermission(t *testing.T) {
	dir, env := acpRepo(t, acpAskScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	pid := c.start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix it"}}})
	asked := <-c.asked
	assert.Equal(t, id, asked["sessionId"])
	var req map[string]any
	for m := range c.msgs {
		if m["method"] == "session/request_permission" {
			req = m
			break
		}
	}
	// The client cancels, and answers the open request "cancelled" as ACP requires.
	c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": id}})
	c.send(map[string]any{"jsonrpc": "2.0", "id": req["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}})
	resp, _ := c.wait(pid)
	assert.Equal(t, "cancelled", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	assert.Equal(t, "Hello, wrold!\n", string(data), "a cancelled edit is not made")
}

func TestACPStdinClosedMidTurn(t *testing.T) {
	dir, env := acpRepo(t, acpAskScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	c.start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix it"}}})
	<-c.asked // the turn waits on the editor, which goes away
	c.in.Close()
	select {
	case <-c.exit:
		assert.Equal(t, 0, c.code, "stderr: %s", c.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("decode acp did not end when stdin closed")
	}
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err, "the session was saved")
	es := s.Entries()
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type, "the run ended its session")
	require.NoError(t, s.Lock(), "the session lock is released")
	require.NoError(t, s.Unlock())
}

func TestACPTwoSessionsAtOnce(t *testing.T) {
	dir, env := acpRepo(t, `{"responses": [{"text": "Looking.", "calls": [{"name": "read", "args": {"path": "greeting.txt"}}]}, {"text": "It says hello."}]}`)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	a := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	b := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	require.NotEqual(t, a, b)
	pa := c.start("session/prompt", map[string]any{"sessionId": a, "prompt": []any{map[string]any{"type": "text", "text": "read it"}}})
	pb := c.start("session/prompt", map[string]any{"sessionId": b, "prompt": []any{map[string]any{"type": "text", "text": "read it"}}})
	got := map[string]bool{}
	bySession := map[string]int{}
	for len(got) < 2 {
		m, ok := <-c.msgs
		require.True(t, ok, "stdout closed; stderr: %s", c.stderr.String())
		if m["method"] == "session/update" {
			bySession[m["params"].(map[string]any)["sessionId"].(string)]++
			continue
		}
		idStr := fmt.Sprint(m["id"])
		if idStr == pa || idStr == pb {
			assert.Equal(t, "end_turn", result(t, m)["stopReason"], "stderr: %s", c.stderr.String())
			got[idStr] = true
		}
	}
	assert.Positive(t, bySession[a])
	assert.Equal(t, bySession[a], bySession[b], "each session got its own updates")
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	for _, id := range []string{a, b} {
		s, err := st.Open(context.Background(), id)
		require.NoError(t, err)
		es := s.Entries()
		assert.Equal(t, session.TypeEnd, es[len(es)-1].Type)
	}
}

// A session/cancel alone, with the permission request left unanswered,
// stops the turn: the request is abandoned and the edit not made.
func TestACPCancelNotificationAlone(t *testing.T) {
	dir, env := acpRepo(t, acpAskScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	pid := c.start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix it"}}})
	<-c.asked
	c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": id}})
	resp, _ := c.wait(pid)
	assert.Equal(t, "cancelled", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	assert.Equal(t, "Hello, wrold!\n", string(data), "a cancelled edit is not made")
}

// session/set_mode changes the gate's mode of the next prompt: in edit
// mode the edit runs without a permission request.
func TestACPSetMode(t *testing.T) {
	dir, env := acpRepo(t, acpEditScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	c.answer = func(map[string]any) map[string]any {
		return map[string]any{"outcome": "selected", "optionId": "reject_once"}
	}
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	resp, _ := c.request("session/set_mode", map[string]any{"sessionId": id, "modeId": "yolo"})
	assert.EqualValues(t, rpcInvalidParams, resp["error"].(map[string]any)["code"], "an unknown mode is refused")
	result(t, first(c.request("session/set_mode", map[string]any{"sessionId": id, "modeId": "edit"})))
	resp, _ = c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix it"}}})
	assert.Equal(t, "end_turn", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	assert.Empty(t, c.asked, "edit mode asks nothing about an edit in the workspace")
	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	assert.Equal(t, "Hello, world!\n", string(data))
}

// A closed stdin while the model is still answering: after the grace the
// prompt is cancelled outright, the session saved, and decode exits 0.
func TestACPStdinClosedMidStream(t *testing.T) {
	defer func(g time.Duration) { acpDrainGrace = g }(acpDrainGrace)
	acpDrainGrace = 300 * time.Millisecond
	dir, env := acpRepo(t, `{"responses": [{"text": "slow", "delay_ms": 60000}]}`)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	c.start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "take your time"}}})
	time.Sleep(200 * time.Millisecond) // the model request is under way
	c.in.Close()
	select {
	case <-c.exit:
		assert.Equal(t, 0, c.code, "stderr: %s", c.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("decode acp did not end when stdin closed during a model request")
	}
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err, "the session was saved")
	var types []string
	for _, e := range s.Entries() {
		types = append(types, e.Type)
	}
	assert.Contains(t, types, session.TypeUser)
	assert.Equal(t, session.TypeEnd, types[len(types)-1])
	require.NoError(t, s.Lock(), "the session lock is released")
	require.NoError(t, s.Unlock())
}

// A limit given to decode acp applies to each prompt as to decode run,
// and the turn ends with stopReason max_turn_requests.
func TestACPLimit(t *testing.T) {
	dir, env := acpRepo(t, acpEditScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"), "--max-steps", "1")
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir})))["sessionId"].(string)
	resp, _ := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix it"}}})
	assert.Equal(t, "max_turn_requests", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
}

// TestACPClientBuffers: a client that offers fs/* holds an unsaved buffer
// of greeting.txt that differs from the disk. The model reads the buffer,
// the edit applies to the buffer and arrives as fs/write_text_file, and
// the file on disk is left as it was.
func TestACPClientBuffers(t *testing.T) {
	dir, env := acpRepo(t, acpEditScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"), "--sandbox", "off", "--mode", "edit")
	greeting := filepath.Join(dir, "greeting.txt")
	var mu sync.Mutex
	buffer := "Hello, wrold! (unsaved)\n"
	var reads []string
	var writes []map[string]any
	c.fs = func(method string, p map[string]any) any {
		mu.Lock()
		defer mu.Unlock()
		if p["path"] != greeting {
			return nil // no buffer: decode reads the disk
		}
		switch method {
		case "fs/read_text_file":
			reads = append(reads, p["path"].(string))
			return map[string]any{"content": buffer}
		case "fs/write_text_file":
			writes = append(writes, p)
			buffer = p["content"].(string)
			return map[string]any{}
		}
		return nil
	}
	result(t, first(c.request("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}})))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))["sessionId"].(string)

	resp, updates := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix the typo"}}})
	assert.Equal(t, "end_turn", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())

	var readResult string
	var diff map[string]any
	for _, u := range updates {
		cs, _ := u["content"].([]any)
		for _, x := range cs {
			m := x.(map[string]any)
			if m["type"] == "diff" {
				diff = m
			}
			if inner, ok := m["content"].(map[string]any); ok && strings.Contains(fmt.Sprint(inner["text"]), "1\tHello, wrold") {
				readResult = fmt.Sprint(inner["text"])
			}
		}
	}
	assert.Contains(t, readResult, "1\tHello, wrold! (unsaved)\n", "the read tool shows the editor's buffer, not the disk")

	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, reads, "the file tools read through fs/read_text_file")
	require.Len(t, writes, 1, "the edit arrives as fs/write_text_file")
	assert.Equal(t, id, writes[0]["sessionId"])
	assert.Equal(t, "Hello, world! (unsaved)\n", writes[0]["content"], "the edit applied to the buffer")
	data, err := os.ReadFile(greeting)
	require.NoError(t, err)
	assert.Equal(t, "Hello, wrold!\n", string(data), "the disk is left to the editor")
	require.NotNil(t, diff, "the edit's update carries a diff")
	assert.Equal(t, "Hello, wrold! (unsaved)\n", diff["oldText"])
	assert.Equal(t, "Hello, world! (unsaved)\n", diff["newText"])
}

// TestACPClientBufferUnansweredCancel: a client that offers fs/* but
// never answers a read does not hold the turn past session/cancel.
func TestACPClientBufferUnansweredCancel(t *testing.T) {
	dir, env := acpRepo(t, acpEditScript)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"), "--sandbox", "off", "--mode", "edit")
	result(t, first(c.request("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}})))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))["sessionId"].(string)

	pid := c.start("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "fix the typo"}}})
	timeout := time.After(30 * time.Second)
	for asked := false; !asked; {
		select {
		case m := <-c.msgs:
			asked = m["method"] == "fs/read_text_file"
		case <-timeout:
			t.Fatalf("no fs/read_text_file request; stderr:\n%s", c.stderr.String())
		}
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": id}})
	resp, _ := c.wait(pid)
	assert.Equal(t, "cancelled", result(t, resp)["stopReason"])
}
