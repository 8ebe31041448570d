package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longServer is an OpenAI-compatible server that plays a long session: a
// todo call, then reads of f1..f40 in turn, then an answer. A summary
// request (compaction) gets a short summary. It checks every request as it
// comes: the size against the window, and, once the context was compacted,
// that the task, the steering message and the todo list are in it verbatim.
type longServer struct {
	t      *testing.T
	steps  int // reads before the answer
	window int // tokens; a request's bytes/4 must not pass it
	task   string
	steer  string
	// onStep runs before the answer to step request n (1-based).
	onStep func(n int)

	mu        sync.Mutex
	stepN     int
	summaries int
	compacted int // step requests built from a compaction
	largest   int // bytes of the largest request
	bodies    []string
	answer    bool // answer every step request with text (fork, replay)
}

const todoItem = "read every file in the repository"

func (s *longServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) < 2 {
		s.t.Errorf("request is not a chat completion: %v", err)
		http.Error(w, "bad request", 400)
		return
	}
	s.mu.Lock()
	s.largest = max(s.largest, len(body))
	s.bodies = append(s.bodies, string(body))
	if tokens := len(body) / 4; tokens > s.window {
		s.t.Errorf("request %d is %d tokens (bytes/4), over the %d-token window", len(s.bodies), tokens, s.window)
	}
	usage := len(body) / 4
	if strings.HasPrefix(req.Messages[0].Content, "You summarise the earlier part") {
		s.summaries++
		n := s.summaries
		s.mu.Unlock()
		streamText(w, fmt.Sprintf("Summary %d: the files were read in turn; nothing failed.", n), usage)
		return
	}
	s.stepN++
	n := s.stepN
	first := req.Messages[1].Content
	if strings.Contains(first, "decode compacted this conversation") {
		s.compacted++
		for what, text := range map[string]string{"task": s.task, "todo list": "[>] " + todoItem} {
			if !strings.Contains(first, text) {
				s.t.Errorf("step request %d: the %s is not in the compacted context verbatim", n, what)
			}
		}
		if n > 6 && !strings.Contains(first, s.steer) {
			s.t.Errorf("step request %d: the steering message of step 5 is not in the compacted context verbatim", n)
		}
	}
	answer := s.answer
	s.mu.Unlock()
	if s.onStep != nil {
		s.onStep(n)
	}
	switch {
	case answer || n > s.steps+1:
		streamText(w, "All files read.", usage)
	case n == 1:
		streamCall(w, n, "todo", fmt.Sprintf(`{"todos":[{"content":%q,"status":"in_progress"},{"content":"write the report","status":"pending"}]}`, todoItem), usage)
	default:
		streamCall(w, n, "read", fmt.Sprintf(`{"path":"f%d.txt"}`, (n-2)%40+1), usage)
	}
}

func chunk(w io.Writer, v string) { fmt.Fprintf(w, "data: %s\n\n", v) }

func streamText(w http.ResponseWriter, text string, usage int) {
	w.Header().Set("Content-Type", "text/event-stream")
	t, _ := json.Marshal(text)
	chunk(w, `{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(t)+`},"finish_reason":null}]}`)
	chunk(w, `{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	chunk(w, fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":12,"total_tokens":%d}}`, usage, usage+12))
	chunk(w, "[DONE]")
}

func streamCall(w http.ResponseWriter, n int, name, args string, usage int) {
	w.Header().Set("Content-Type", "text/event-stream")
	a, _ := json.Marshal(args)
	chunk(w, fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[{"index":0,"delta":{"role":"assistant","content":"Step %d.","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`, n, n, name, a))
	chunk(w, `{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	chunk(w, fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","model":"fake-16k","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":20,"total_tokens":%d}}`, usage, usage+20))
	chunk(w, "[DONE]")
}

// longRepo is a repository of 40 files of about 2.5 KB each, configured
// with a 16k-token window for the fake model.
func longRepo(t *testing.T) string {
	files := []string{".decode/config.toml", "[models.\"openai:fake-16k\"]\ncontext_window = 16384\n"}
	for i := 1; i <= 40; i++ {
		var b strings.Builder
		for j := 1; j <= 30; j++ {
			fmt.Fprintf(&b, "file %d line %d: some text that fills the file to about two and a half KB\n", i, j)
		}
		files = append(files, fmt.Sprintf("f%d.txt", i), b.String())
	}
	return testRepo(t, files...)
}

func sessionIDs(t *testing.T, dir string) []string {
	out := strings.Fields(gitIn(t, dir, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/decode/sessions/"))
	return out
}

// TestLongSessionCompacts runs a 300-step session through the built
// binary against a local OpenAI-compatible server with a 16k-token window:
// it finishes (exit 0), no request passes the window, the task, a steering
// message sent at step 5 by decode steer and the todo list are in every
// compacted request verbatim, and every raw entry stays in the log. Forks
// before and after a compaction, and a replay, work.
func TestLongSessionCompacts(t *testing.T) {
	if testing.Short() {
		t.Skip("a 300-step session")
	}
	dir := longRepo(t)
	srv := &longServer{t: t, steps: 300, window: 16384,
		task:  "Read every file of this repository, f1.txt to f40.txt, again and again, and report what they hold.",
		steer: "While you read, count the lines that mention 'two and a half KB'.",
	}
	env := decodeEnv(dir, "OPENAI_API_KEY=sk-test")
	srv.onStep = func(n int) {
		if n != 5 {
			return
		}
		ids := sessionIDs(t, dir)
		cmd := exec.Command("decode", "steer", ids[0], srv.steer)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("decode steer: %v: %s", err, out)
		}
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	env = append(env, "OPENAI_BASE_URL="+hs.URL+"/v1")

	stdout, stderr, code := decodeRun(t, dir, env, "", "run", "-m", "openai:fake-16k", "--mode", "edit", srv.task)
	require.Equal(t, 0, code, "stderr: %s", tail(stderr, 2000))
	assert.Contains(t, stdout, "All files read.")
	assert.Contains(t, stderr, "↪ steer: "+srv.steer)
	assert.Contains(t, stderr, "⇣ compacted the context (threshold)")
	srv.mu.Lock()
	steps, compacted, summaries := srv.stepN, srv.compacted, srv.summaries
	srv.mu.Unlock()
	assert.Equal(t, 302, steps, "a todo call, 300 reads and the answer, each asked once: the session kept its place")
	assert.Greater(t, compacted, 250, "most requests were built from a compaction")
	assert.GreaterOrEqual(t, summaries, 10)
	t.Logf("%d step requests, %d summaries, %d built from a compaction, largest request %d bytes", steps, summaries, compacted, srv.largest)

	// Every raw entry is still in the log.
	jsonl, _, code := decodeRun(t, dir, env, "", "log", "--jsonl", "@")
	require.Equal(t, 0, code)
	assert.Equal(t, 301, strings.Count(jsonl, `"type":"tool_result"`), "every tool result")
	assert.Equal(t, 302, strings.Count(jsonl, `"type":"assistant"`), "every model response")
	assert.Equal(t, 1, strings.Count(jsonl, `"type":"steer","data"`))
	assert.Equal(t, summaries, strings.Count(jsonl, `"type":"compaction","data"`), "one compaction entry per summary")
	stat, _, _ := decodeRun(t, dir, env, "", "log", "--stat", "@")
	assert.Regexp(t, fmt.Sprintf(`compactions %d \(%d summary calls`, summaries, summaries), stat)

	id := sessionIDs(t, dir)[0]
	firstCompaction := entryIDOf(t, jsonl, "compaction", 1)
	srv.mu.Lock()
	srv.answer = true
	srv.mu.Unlock()

	// A fork before the first compaction rebuilds the context it had then:
	// the early tool results in full, no state record.
	before := firstCompaction - 1
	_, stderr, code = decodeRun(t, dir, env, "", "fork", fmt.Sprintf("%s@%d", id, before))
	require.Equal(t, 0, code, stderr)
	_, stderr, code = decodeRun(t, dir, env, "", "resume", "@", "what did f1.txt hold?")
	require.Equal(t, 0, code, stderr)
	last := srv.lastBody()
	assert.NotContains(t, last, "decode compacted this conversation")
	assert.Contains(t, last, "file 1 line 30", "the first read's output, as it was")

	// A fork after it starts from the compaction.
	_, stderr, code = decodeRun(t, dir, env, "", "fork", fmt.Sprintf("%s@%d", id, firstCompaction+3))
	require.Equal(t, 0, code, stderr)
	_, stderr, code = decodeRun(t, dir, env, "", "resume", "@", "and f2.txt?")
	require.Equal(t, 0, code, stderr)
	last = srv.lastBody()
	assert.Contains(t, last, "decode compacted this conversation")
	assert.Contains(t, last, "Summary 1:")

	// A replay re-runs the user turns on a fresh branch.
	_, stderr, code = decodeRun(t, dir, env, "", "replay", id)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, srv.lastBody(), "decode compacted this conversation")
}

func (s *longServer) lastBody() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[len(s.bodies)-1]
}

// entryIDOf returns the id of the n-th entry of type typ in jsonl.
func entryIDOf(t *testing.T, jsonl, typ string, n int) int {
	for _, line := range strings.Split(jsonl, "\n") {
		var e struct {
			ID   int    `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == typ {
			if n--; n == 0 {
				return e.ID
			}
		}
	}
	t.Fatalf("no %s entry", typ)
	return 0
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
