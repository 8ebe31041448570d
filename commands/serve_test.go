package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// serveTestToken is the token the web view's tests use.
const serveTestToken = "0123456789abcdef0123456789abcdef"

// rmScript pauses on a bash call that needs approval, then answers.
const rmScript = `{"responses": [
  {"calls": [{"name": "bash", "args": {"command": "rm notes.txt"}}]},
  {"expect": "(no output)", "text": "Removed it."}
]}`

// serveBed is a repository with a done session, a fork of it and a paused
// run, served by an httptest server.
type serveBed struct {
	t                  *testing.T
	dir                string
	env                []string
	done, fork, paused string
	srv                *httptest.Server
	server             *server
}

func newServeBed(t *testing.T) *serveBed {
	dir := testRepo(t, "notes.txt", "keep?\n", "rm.json", rmScript,
		"hello.json", `{"responses": [{"text": "Hello."}, {"text": "Again."}]}`)
	b := &serveBed{t: t, dir: dir, env: decodeEnv(dir)}
	_, errOut, code := decodeRun(t, dir, b.env, "", "ask", "-m", "script:hello.json", "say hello")
	require.Equal(t, 0, code, errOut)
	b.done = b.latest()
	_, errOut, code = decodeRun(t, dir, b.env, "", "fork", b.done+"@2")
	require.Equal(t, 0, code, errOut)
	b.fork = b.latest()
	_, errOut, code = decodeRun(t, dir, b.env, "", "run", "-m", "script:rm.json", "remove the notes")
	require.Equal(t, 3, code, "the run pauses for approval: %s", errOut)
	b.paused = b.latest()
	st, err := session.OpenStore(dir, session.Env{Getenv: func(string) string { return "" }, Home: filepath.Join(dir, ".home")})
	require.NoError(t, err)
	exe, err := exec.LookPath("decode")
	require.NoError(t, err)
	b.srv = httptest.NewUnstartedServer(nil)
	b.server = newServer(st, serverConfig{Token: serveTestToken, Addr: b.srv.Listener.Addr().String(), Exe: exe, Dir: dir, Env: b.env})
	b.srv.Config.Handler = b.server
	b.srv.Start()
	t.Cleanup(func() {
		b.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b.server.wait(ctx)
	})
	return b
}

func (b *serveBed) latest() string {
	out, errOut, code := decodeRun(b.t, b.dir, b.env, "", "log", "--json", "--limit", "1")
	require.Equal(b.t, 0, code, errOut)
	var infos []infoJSON
	require.NoError(b.t, json.Unmarshal([]byte(out), &infos))
	require.Len(b.t, infos, 1)
	return infos[0].ID
}

// do sends a request with the token as a bearer token (unless the headers
// say otherwise) and returns the response and its body.
func (b *serveBed) do(method, path string, body string, header ...string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+serveTestToken)
	if method == http.MethodPost {
		req.Header.Set("Origin", b.srv.URL)
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&sb)
	return resp, sb.String()
}

func (b *serveBed) getJSON(path string, v any) {
	b.t.Helper()
	resp, body := b.do(http.MethodGet, path, "")
	require.Equal(b.t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	require.NoError(b.t, json.Unmarshal([]byte(body), v), body)
}

func TestServeRefusesRequestsWithoutTokenHostOrOrigin(t *testing.T) {
	b := newServeBed(t)
	resp, body := b.do("GET", "/api/v1/sessions", "", "Authorization", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token")
	assert.Contains(t, body, "open the URL decode serve printed")
	resp, _ = b.do("GET", "/", "", "Authorization", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the page needs the token too")
	resp, _ = b.do("GET", "/api/v1/sessions", "", "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a wrong bearer token")
	resp, _ = b.do("GET", "/?token=wrong", "", "Authorization", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a wrong token in the URL")

	// DNS rebinding: a name that resolves here is still not our Host.
	resp, body = b.do("GET", "/api/v1/sessions", "", "Host", "evil.example:"+port(b.srv.URL))
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "a foreign Host")
	assert.Contains(t, body, "evil.example")
	resp, _ = b.do("GET", "/api/v1/sessions", "", "Host", "localhost:"+port(b.srv.URL))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "localhost names the loopback address too")

	// CSRF: a POST from another origin, or with no Origin, changes nothing.
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/approve", "{}", "Origin", "http://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-origin POST: %s", body)
	resp, _ = b.do("POST", "/api/v1/sessions/"+b.paused+"/approve", "{}", "Origin", "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a POST without Origin")
	resp, _ = b.do("GET", "/api/v1/sessions", "", "Origin", "http://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-origin read")
	var s struct{ Pending []apiWaiting }
	b.getJSON("/api/v1/sessions/"+b.paused, &s)
	require.Len(t, s.Pending, 1)
	assert.Nil(t, s.Pending[0].Decision, "no refused request approved anything")

	// The token in the URL becomes a strict, HttpOnly cookie and leaves the URL.
	resp, _ = b.do("GET", "/?token="+serveTestToken, "", "Authorization", "")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/", resp.Header.Get("Location"))
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	assert.True(t, cookies[0].HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)
	resp, body = b.do("GET", "/", "", "Authorization", "", "Cookie", cookies[0].Name+"="+cookies[0].Value)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<!doctype html>")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")

	// Only the embedded files are served.
	resp, _ = b.do("GET", "/../go.mod", "")
	assert.NotEqual(t, http.StatusOK, resp.StatusCode)
	resp, _ = b.do("GET", "/serve.go", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func port(u string) string {
	pu, _ := url.Parse(u)
	return pu.Port()
}

func TestServeAPI(t *testing.T) {
	b := newServeBed(t)
	var list struct{ Sessions []apiSession }
	b.getJSON("/api/v1/sessions", &list)
	require.Len(t, list.Sessions, 3)
	assert.Equal(t, b.paused, list.Sessions[0].ID, "newest first")

	b.getJSON("/api/v1/sessions?status=paused", &list)
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, b.paused, list.Sessions[0].ID)
	b.getJSON("/api/v1/sessions?status=done,forked", &list)
	require.Len(t, list.Sessions, 2, "the done session and its fork")
	b.getJSON("/api/v1/sessions?model=rm.json", &list)
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, b.paused, list.Sessions[0].ID)
	b.getJSON("/api/v1/sessions?since=1h&limit=2", &list)
	assert.Len(t, list.Sessions, 2)
	resp, body := b.do("GET", "/api/v1/sessions?since=yesterday", "")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "positive duration")

	// entries, paged
	var page struct {
		Entries []session.Entry
		Next    int
	}
	b.getJSON("/api/v1/sessions/"+b.done+"/entries?limit=2", &page)
	require.Len(t, page.Entries, 2)
	assert.Equal(t, 1, page.Entries[0].ID)
	assert.Equal(t, 3, page.Next)
	b.getJSON("/api/v1/sessions/"+b.done+"/entries?from=3", &page)
	require.NotEmpty(t, page.Entries)
	assert.Equal(t, 3, page.Entries[0].ID)
	assert.Zero(t, page.Next)
	resp, _ = b.do("GET", "/api/v1/sessions/nosuchsession/entries", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// the tree: the fork hangs under its source at entry 2, from either end
	var tree struct {
		Root  string
		Nodes []treeNode
	}
	b.getJSON("/api/v1/sessions/"+b.fork+"/tree", &tree)
	assert.Equal(t, b.done, tree.Root)
	require.Len(t, tree.Nodes, 2)
	assert.Equal(t, b.done, tree.Nodes[0].ID)
	assert.Equal(t, b.fork, tree.Nodes[1].ID)
	assert.Equal(t, b.done, tree.Nodes[1].Parent)
	assert.Equal(t, 2, tree.Nodes[1].At)
	b.getJSON("/api/v1/sessions/"+b.paused+"/tree", &tree)
	assert.Equal(t, b.paused, tree.Root)
	assert.Len(t, tree.Nodes, 1, "an unrelated session is a tree of its own")

	// log --diff and --stat figures
	var diff struct {
		Diff  sessionDiff
		AStat sessionStat `json:"a_stat"`
	}
	b.getJSON("/api/v1/diff?a="+b.done+"&b="+b.fork, &diff)
	assert.Equal(t, 2, diff.Diff.Common)
	assert.NotEmpty(t, diff.Diff.AAfter)
	assert.Equal(t, 1, diff.AStat.Requests)
	var stat sessionStat
	b.getJSON("/api/v1/sessions/"+b.done+"/stat", &stat)
	assert.Equal(t, 1, stat.Requests)
	assert.Equal(t, "done", stat.Status)

	// what the paused run waits for
	var s struct {
		Pending []apiWaiting
		LastID  int `json:"last_id"`
	}
	b.getJSON("/api/v1/sessions/"+b.paused, &s)
	require.Len(t, s.Pending, 1)
	assert.Equal(t, "bash", s.Pending[0].Name)
	assert.Equal(t, session.WaitApproval, s.Pending[0].Kind)

	resp, body = b.do("GET", "/api/v1/sessions/"+b.done+"/code", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	assert.Contains(t, body, "no code snapshots")
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/explode", "{}")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "unknown action")
}

// sseReader reads server-sent events.
type sseReader struct {
	sc   *bufio.Scanner
	resp *http.Response
}

type sseMsg struct {
	ID, Event, Data string
}

func (b *serveBed) stream(path string, lastID string) *sseReader {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.srv.URL+path, nil)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+serveTestToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	b.t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	require.NoError(b.t, err)
	require.Equal(b.t, http.StatusOK, resp.StatusCode)
	b.t.Cleanup(func() { resp.Body.Close() })
	return &sseReader{sc: bufio.NewScanner(resp.Body), resp: resp}
}

func (r *sseReader) next(t *testing.T) sseMsg {
	t.Helper()
	var m sseMsg
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if m.Event != "" {
				return m
			}
		case strings.HasPrefix(line, "id: "):
			m.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			m.Data = line[6:]
		}
	}
	t.Fatalf("the stream ended: %v", r.sc.Err())
	return m
}

// entries reads events until a session event, returning the entries.
func (r *sseReader) entries(t *testing.T) []session.Entry {
	t.Helper()
	var es []session.Entry
	for {
		m := r.next(t)
		if m.Event == "session" {
			return es
		}
		require.Equal(t, "entry", m.Event)
		var e session.Entry
		require.NoError(t, json.Unmarshal([]byte(m.Data), &e))
		assert.Equal(t, strconv.Itoa(e.ID), m.ID, "the event id is the entry id")
		es = append(es, e)
	}
}

func TestServeLiveStreamFollowsARunToDone(t *testing.T) {
	b := newServeBed(t)
	live := b.stream("/api/v1/sessions/"+b.paused+"/events", "")
	first := live.entries(t)
	require.NotEmpty(t, first)
	assert.Equal(t, 1, first[0].ID)
	last := first[len(first)-1].ID

	// approve and resume through the API: the CLI's commands, as subprocesses
	resp, body := b.do("POST", "/api/v1/sessions/"+b.paused+"/approve", "{}")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "approved bash rm notes.txt")
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/resume", "{}")
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode, body)

	// entries committed while connected arrive, in order, up to the end
	var got []session.Entry
	for !hasEnd(got) {
		got = append(got, live.entries(t)...)
	}
	require.Equal(t, session.TypeApproval, got[0].Type, "the approval comes first")
	assert.Equal(t, last+1, got[0].ID)
	for i := 1; i < len(got); i++ {
		assert.Equal(t, got[i-1].ID+1, got[i].ID, "no entry is lost or repeated")
	}
	var end session.EndData
	require.NoError(t, got[len(got)-1].Decode(&end))
	assert.Equal(t, session.StatusDone, end.Status)
	assert.NoFileExists(t, filepath.Join(b.dir, "notes.txt"), "the approved call ran")

	// a reconnect from entry N gets exactly what came after N
	again := b.stream("/api/v1/sessions/"+b.paused+"/events", strconv.Itoa(last))
	replay := again.entries(t)
	require.NotEmpty(t, replay)
	assert.Equal(t, last+1, replay[0].ID)
	assert.Equal(t, got[len(got)-1].ID, replay[len(replay)-1].ID)
	from := b.stream("/api/v1/sessions/"+b.paused+"/events?from="+strconv.Itoa(last), "")
	assert.Equal(t, last, from.entries(t)[0].ID, "?from=N starts at entry N")

	// the code the run changed: notes.txt removed
	var code struct{ Diff string }
	b.getJSON("/api/v1/sessions/"+b.paused+"/code", &code)
	assert.Contains(t, code.Diff, "deleted file mode")
	assert.Contains(t, code.Diff, "notes.txt")
}

func hasEnd(es []session.Entry) bool {
	for _, e := range es {
		if e.Type == session.TypeEnd {
			var d session.EndData
			if e.Decode(&d) == nil && d.Status != session.StatusPaused {
				return true
			}
		}
	}
	return false
}

func TestServeListStreamShowsNewSessions(t *testing.T) {
	b := newServeBed(t)
	list := b.stream("/api/v1/events", "")
	seen := map[string]bool{}
	for len(seen) < 3 {
		m := list.next(t)
		require.Equal(t, "session", m.Event)
		var in infoJSON
		require.NoError(t, json.Unmarshal([]byte(m.Data), &in))
		seen[in.ID] = true
	}
	_, errOut, code := decodeRun(t, b.dir, b.env, "", "fork", b.fork)
	require.Equal(t, 0, code, errOut)
	m := list.next(t)
	var in infoJSON
	require.NoError(t, json.Unmarshal([]byte(m.Data), &in))
	assert.False(t, seen[in.ID], "the event names the new session")
	assert.Equal(t, "forked", in.Status)
}

func TestServeActionsNeedTheirText(t *testing.T) {
	b := newServeBed(t)
	resp, body := b.do("POST", "/api/v1/sessions/"+b.paused+"/answer", `{"text": " "}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "answer needs a text")
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/steer", `{}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "steer needs a message")
	// the CLI's own refusal comes back: nothing waits for an answer
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/answer", `{"text": "yes"}`)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Contains(t, body, "nothing waits for an answer")
	// deny with a reason records the CLI's entry
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/deny", `{"reason": "--keep the notes"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var s struct{ Pending []apiWaiting }
	b.getJSON("/api/v1/sessions/"+b.paused, &s)
	require.Len(t, s.Pending, 1)
	require.NotNil(t, s.Pending[0].Decision)
	assert.Equal(t, "deny", s.Pending[0].Decision.Decision)
	assert.Equal(t, "--keep the notes", s.Pending[0].Decision.Reason, "a reason starting with dashes stays a reason")
	assert.NotEmpty(t, s.Pending[0].Decision.MAC, "signed as the CLI signs it")
	// steer queues a message for the session
	resp, body = b.do("POST", "/api/v1/sessions/"+b.paused+"/steer", `{"message": "also tidy up"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "queued for session")
}

func TestServeAnswersAQuestionAndResumesToDone(t *testing.T) {
	b := newServeBed(t)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "ask.json"), []byte(`{"responses": [
  {"calls": [{"name": "ask_user", "args": {"question": "v1 or v2?"}}]},
  {"expect": "v2, please", "text": "Going with v2."}
]}`), 0o644))
	_, errOut, code := decodeRun(t, b.dir, b.env, "", "run", "-m", "script:ask.json", "upgrade the dependency")
	require.Equal(t, 3, code, errOut)
	id := b.latest()
	var s struct{ Pending []apiWaiting }
	b.getJSON("/api/v1/sessions/"+id, &s)
	require.Len(t, s.Pending, 1)
	assert.Equal(t, "v1 or v2?", s.Pending[0].Question)

	// resuming before the answer stays paused: the CLI's own exit 3
	resp, body := b.do("POST", "/api/v1/sessions/"+id+"/resume", "{}")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"exit":3`)

	resp, body = b.do("POST", "/api/v1/sessions/"+id+"/answer", `{"text": "v2, please"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	live := b.stream("/api/v1/sessions/"+id+"/events", "")
	resp, body = b.do("POST", "/api/v1/sessions/"+id+"/resume", "{}")
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode, body)
	var got []session.Entry
	for !hasEnd(got) {
		got = append(got, live.entries(t)...)
	}
	var texts []string
	for _, e := range got {
		var d session.AssistantData
		if e.Type == session.TypeAssistant && e.Decode(&d) == nil {
			texts = append(texts, d.Message.Text)
		}
	}
	assert.Contains(t, texts, "Going with v2.", "the model got the answer and finished")
}

func TestServeAllowedHosts(t *testing.T) {
	h := allowedHosts("127.0.0.1:7433")
	for _, ok := range []string{"127.0.0.1:7433", "localhost:7433", "[::1]:7433"} {
		assert.True(t, h[ok], ok)
	}
	for _, bad := range []string{"127.0.0.1:7434", "evil.example:7433", "localhost", "127.0.0.1.nip.io:7433"} {
		assert.False(t, h[bad], bad)
	}
	// a wildcard listen takes this machine's addresses, never a name
	h = allowedHosts("0.0.0.0:7433")
	assert.True(t, h["127.0.0.1:7433"])
	assert.False(t, h["0.0.0.0:7434"])
	for host := range h {
		name, _, err := net.SplitHostPort(host)
		require.NoError(t, err)
		assert.True(t, name == "localhost" || net.ParseIP(name) != nil, "%s is an IP literal", host)
	}
	h = allowedHosts("192.0.2.7:7433")
	assert.True(t, h["192.0.2.7:7433"], "the address listened on")
	assert.False(t, h["192.0.2.8:7433"])
}
