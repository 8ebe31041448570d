package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/tools"
	"decode/tools/mcp/mcptest"
)

// TestMain lets the test binary serve as an MCP server over stdio: a
// server config runs os.Args[0] with MCPTEST_MODE set.
func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPTEST_MODE"); mode != "" {
		os.Exit(mcptest.Main(mode))
	}
	os.Exit(m.Run())
}

func stdioServer(name, mode string) Server {
	return Server{Name: name, Command: os.Args[0], Env: map[string]string{"MCPTEST_MODE": mode}, Source: SourceUser}
}

func start(t *testing.T, servers ...Server) *Manager {
	t.Helper()
	m := NewManager(servers, Options{Version: "test", Env: os.Environ(), Dir: t.TempDir(), TempDir: t.TempDir()})
	t.Cleanup(func() { m.Close() })
	m.Start(context.Background())
	return m
}

func toolByName(t *testing.T, m *Manager, name string) tools.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	require.Failf(t, "no tool", "%s is not among the tools", name)
	return nil
}

func call(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), json.RawMessage(args))
	require.NoError(t, err)
	return res
}

func TestStdioServerTools(t *testing.T) {
	m := start(t, stdioServer("test", "ok"))
	c := m.Servers()[0]
	require.Equal(t, StateReady, c.State, "the server should start: %v", c.Err)
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Spec().Name)
	}
	assert.Contains(t, names, "mcp__test__echo")
	assert.Contains(t, names, "mcp__test__add")

	res := call(t, toolByName(t, m, "mcp__test__echo"), `{"text":"hi"}`)
	assert.False(t, res.IsError)
	assert.Equal(t, "echo: hi", res.Content)

	res = call(t, toolByName(t, m, "mcp__test__add"), `{"a":2,"b":3}`)
	assert.Contains(t, res.Content, `{"sum":5}`, "structured content comes back as JSON")

	res = call(t, toolByName(t, m, "mcp__test__picture"), `{}`)
	assert.Contains(t, res.Content, "here it is")
	assert.Contains(t, res.Content, "[image 1: image/png, 33 bytes, attached where the model takes images]")
	require.Len(t, res.Images, 1, "the image goes along for models that take it")
	assert.Equal(t, "image/png", res.Images[0].MIME)
	assert.Equal(t, []byte("\x89PNG"), res.Images[0].Data[:4])
	assert.Contains(t, res.Content, "[resource link: pixel.png <file:///tmp/pixel.png> image/png]")

	note := toolByName(t, m, "mcp__test__write_note")
	assert.False(t, note.ReadOnly(), "readOnlyHint is advice, not permission")
	assert.True(t, note.(*Tool).ServerSaysReadOnly())
	schema := string(note.Spec().Schema)
	assert.NotContains(t, schema, "$ref")
	assert.NotContains(t, schema, "$defs")
	assert.Contains(t, schema, `"body"`, "the $ref is inlined")
}

func TestReadOnlyOnlyFromUserConfig(t *testing.T) {
	user := stdioServer("u", "ok")
	user.ReadOnly = true
	project := stdioServer("p", "ok")
	project.ReadOnly, project.Source = true, SourceMCPJSON
	m := start(t, user, project)
	assert.True(t, toolByName(t, m, "mcp__u__echo").ReadOnly(), "the user's config may mark a server read-only")
	assert.False(t, toolByName(t, m, "mcp__p__echo").ReadOnly(), "a project's config may not")
}

func TestEnabledAndDisabledTools(t *testing.T) {
	s := stdioServer("t", "ok")
	s.EnabledTools = []string{"echo", "add"}
	s.DisabledTools = []string{"add"}
	m := start(t, s)
	require.Len(t, m.Tools(), 1)
	assert.Equal(t, "mcp__t__echo", m.Tools()[0].Spec().Name)

	off := false
	d := stdioServer("d", "ok")
	d.Enabled = &off
	m = start(t, d)
	assert.Equal(t, StateDisabled, m.Servers()[0].State)
	assert.Empty(t, m.Tools())
}

func TestStreamableHTTP(t *testing.T) {
	var auth atomic.Value
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcptest.NewServer("", 0) }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Team"))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := Server{Name: "web", URL: srv.URL, Headers: map[string]string{"X-Team": "blue"}, BearerTokenEnv: "WEB_TOKEN", Source: SourceUser}
	m := NewManager([]Server{s}, Options{Getenv: func(k string) string {
		if k == "WEB_TOKEN" {
			return "sekrit"
		}
		return ""
	}})
	defer m.Close()
	require.Empty(t, m.Start(context.Background()))
	res := call(t, toolByName(t, m, "mcp__web__echo"), `{"text":"over http"}`)
	assert.Equal(t, "echo: over http", res.Content)
	assert.Equal(t, "Bearer sekrit|blue", auth.Load(), "headers and the bearer token are sent")
}

func TestHTTPMissingToken(t *testing.T) {
	m := NewManager([]Server{{Name: "web", URL: "http://127.0.0.1:1/mcp", BearerTokenEnv: "NOPE"}}, Options{})
	errs := m.Start(context.Background())
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "NOPE, which is not set")
}

func TestStartupTimeout(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	s := stdioServer("slow", "hang")
	s.Env["MCPTEST_PIDFILE"] = pidfile
	s.StartupTimeout = Duration(300 * time.Millisecond)
	m := NewManager([]Server{s}, Options{Env: os.Environ()})
	errs := m.Start(context.Background())
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "MCP server slow: did not start within 300ms")
	assert.Equal(t, StateFailed, m.Servers()[0].State)
	assertDead(t, pidfile)
}

// TestNoOrphans runs the server under a shell, so the server is the
// shell's child; stopping it must reach the whole process group.
func TestNoOrphans(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	s := Server{Name: "sh", Command: "sh", Args: []string{"-c", `"$0"; true`, os.Args[0]},
		Env: map[string]string{"MCPTEST_MODE": "stubborn", "MCPTEST_PIDFILE": pidfile}, Source: SourceUser}
	m := NewManager([]Server{s}, Options{Env: os.Environ()})
	require.Empty(t, m.Start(context.Background()))
	pid := readPid(t, pidfile)
	require.NoError(t, syscall.Kill(pid, 0), "the server runs")
	m.Close()
	assertDead(t, pidfile)
}

func readPid(t *testing.T, pidfile string) int {
	t.Helper()
	var data []byte
	require.Eventually(t, func() bool {
		data, _ = os.ReadFile(pidfile)
		return len(data) > 0
	}, 5*time.Second, 10*time.Millisecond, "the server writes its pid")
	pid, err := strconv.Atoi(string(data))
	require.NoError(t, err)
	return pid
}

// assertDead checks that the process in pidfile is gone (or a zombie
// about to be reaped by its parent).
func assertDead(t *testing.T, pidfile string) {
	t.Helper()
	pid := readPid(t, pidfile)
	assert.Eventually(t, func() bool {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		return strings.Contains(string(stat), ") Z ")
	}, 10*time.Second, 20*time.Millisecond, "process %d should be stopped", pid)
}

func TestCallTimeout(t *testing.T) {
	s := stdioServer("t", "ok")
	s.ToolTimeout = Duration(300 * time.Millisecond)
	m := start(t, s)
	res := call(t, toolByName(t, m, "mcp__t__slow"), `{"seconds":30}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "MCP server t did not answer slow within 300ms")
	// The server is still usable after a cancelled call.
	res = call(t, toolByName(t, m, "mcp__t__echo"), `{"text":"still here"}`)
	assert.Equal(t, "echo: still here", res.Content)
}

func TestCrashAtStart(t *testing.T) {
	m := NewManager([]Server{stdioServer("db", "crash")}, Options{Env: os.Environ()})
	errs := m.Start(context.Background())
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "cannot open the database", "the server's stderr explains the failure")
	m.Close()
}

func TestFloodIsBounded(t *testing.T) {
	for _, junk := range []bool{false, true} {
		m := start(t, stdioServer("f", "ok"))
		res := call(t, toolByName(t, m, "mcp__f__flood"), `{"junk":`+strconv.FormatBool(junk)+`}`)
		assert.True(t, res.IsError, "a flooding server fails the call (junk=%v)", junk)
		assert.Contains(t, res.Content, "MCP server f failed on flood")
	}
}

func TestOutputCap(t *testing.T) {
	m := start(t, stdioServer("t", "ok"))
	res := call(t, toolByName(t, m, "mcp__t__big"), `{"n":200000}`)
	assert.False(t, res.IsError)
	assert.Less(t, len(res.Content), maxOutputBytes+500)
	i := strings.Index(res.Content, "the full output is in ")
	require.Positive(t, i, "the cut output names its file: %s", res.Content[len(res.Content)-300:])
	path := strings.Fields(res.Content[i+len("the full output is in "):])[0]
	path = strings.TrimSuffix(path, ":")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(data), 200000)
}

func TestToolName(t *testing.T) {
	assert.Equal(t, "mcp__github__list_issues", ToolName("github", "list_issues"))
	assert.Equal(t, "mcp__my_server__get_file_v1", ToolName("my.server", "get/file v1"))
	long := ToolName("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on_and_on")
	assert.Len(t, long, 64)
	assert.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, long)
	other := ToolName("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on_and_on_2")
	assert.NotEqual(t, long, other, "two long names stay distinct")
}

func TestParseMCPJSON(t *testing.T) {
	data := `{"mcpServers":{
		"gh":{"command":"npx","args":["-y","server-github","${HOME}/x"],"env":{"TOKEN":"${GH_TOKEN:-none}"}},
		"web":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${API}"}}}}`
	env := map[string]string{"HOME": "/home/u", "API": "k"}
	got, err := ParseMCPJSON([]byte(data), func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "gh", got[0].Name)
	assert.Equal(t, []string{"-y", "server-github", "/home/u/x"}, got[0].Args)
	assert.Equal(t, "none", got[0].Env["TOKEN"])
	assert.Equal(t, SourceMCPJSON, got[0].Source)
	assert.Equal(t, "Bearer k", got[1].Headers["Authorization"])
	assert.Equal(t, "http", got[1].Transport())

	_, err = ParseMCPJSON([]byte(`{"mcpServers":{"x":{"type":"sse","url":"http://h"}}}`), os.Getenv)
	assert.ErrorContains(t, err, "SSE")
}

func TestSearchRevealsTools(t *testing.T) {
	s := stdioServer("big", "ok")
	s.Env["MCPTEST_EXTRA"] = "40"
	m := start(t, s)
	reg := tools.NewRegistry()
	search := NewSearch(m.Tools(), reg.Reveal)
	reg = tools.NewRegistry(search)
	search.reveal = reg.Reveal
	reg.Defer(m.Tools()...)
	require.Len(t, reg.Specs(), 1, "only mcp_search is described up front")
	assert.Contains(t, search.Spec().Description, "big (48 tools)")

	res := call(t, search, `{"query":"echo"}`)
	assert.Contains(t, res.Content, `{"name":"mcp__big__echo"`)
	assert.Contains(t, res.Content, `"schema"`)
	var names []string
	for _, sp := range reg.Specs() {
		names = append(names, sp.Name)
	}
	assert.Equal(t, []string{"mcp_search", "mcp__big__echo"}, names, "the found tool is described from now on")
	tl, ok := reg.Get("mcp__big__tool_07")
	require.True(t, ok, "a deferred tool is callable")
	assert.Equal(t, "tool_07 ok", call(t, tl, `{"id":"7"}`).Content)

	res = call(t, search, `{"query":"zzqq"}`)
	assert.Contains(t, res.Content, "no MCP tool matches")
}

// TestHTTPFloodIsBounded: a streamable HTTP server whose answer never ends
// fails the call once the answer passes the message limit.
func TestHTTPFloodIsBounded(t *testing.T) {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcptest.NewServer("", 0) }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"tools/call"`) {
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("a", 64<<10)
		for i := 0; i < (maxMessage/len(chunk))+64; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `"}]}}`) // valid, only too large
	}))
	defer srv.Close()
	m := NewManager([]Server{{Name: "web", URL: srv.URL}}, Options{})
	defer m.Close()
	require.Empty(t, m.Start(context.Background()))
	res := call(t, toolByName(t, m, "mcp__web__echo"), `{"text":"x"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "MCP server web failed on echo")
	assert.Contains(t, res.Content, "larger than 8 MB", "the limit, not a broken answer, failed the call")
}
