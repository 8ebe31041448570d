package commands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent"
	"decode/agent/llm"
)

const demoScript = `{"responses": [
  {"text": "Looking.", "calls": [{"name": "read", "args": {"path": "greeting.txt"}}], "usage": {"input": 100, "output": 10}},
  {"expect": "Hello, wrold", "calls": [{"name": "edit", "args": {"path": "greeting.txt", "old_string": "Hello, wrold", "new_string": "Hello, world"}}], "usage": {"input": 120, "output": 20}},
  {"expect": "greeting.txt", "text": "Fixed the typo.", "usage": {"input": 140, "output": 5}}
]}`

// normalizeEvents replaces what changes from run to run: session ids,
// times, durations and the temporary directory.
func normalizeEvents(out, dir string) string {
	out = regexp.MustCompile(`"session":"[^"]+"`).ReplaceAllString(out, `"session":"SESSION"`)
	out = regexp.MustCompile(`"ts":"[^"]+"`).ReplaceAllString(out, `"ts":"TS"`)
	out = regexp.MustCompile(`"ms":\d+`).ReplaceAllString(out, `"ms":0`)
	return strings.ReplaceAll(out, dir, "$WORK")
}

func TestJSONEventsGolden(t *testing.T) {
	dir := testRepo(t, "greeting.txt", "Hello, wrold!\n", "demo.json", demoScript)
	stdout, stderr, code := decodeRun(t, dir, decodeEnv(dir), "", "run", "--json", "--mode", "edit", "-m", "script:demo.json", "fix the typo")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	for i, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		assert.True(t, json.Valid([]byte(line)), "line %d is one JSON value: %s", i+1, line)
	}
	golden(t, "events.golden.jsonl", normalizeEvents(stdout, dir))
}

// docExamples reads the example events of the --json documentation: the
// README's section between the events markers when the README has it,
// else the canonical copy in testdata/events.md.
func docExamples(t *testing.T) (string, []map[string]any) {
	t.Helper()
	source := "../README.md"
	section, ok := markedSection(t, source)
	if !ok {
		source = "testdata/events.md"
		section, ok = markedSection(t, source)
		require.True(t, ok, "%s has the events markers", source)
	}
	var examples []map[string]any
	sc := bufio.NewScanner(strings.NewReader(section))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, `{"v":`) {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "%s: example is JSON: %s", source, line)
		examples = append(examples, m)
	}
	require.NotEmpty(t, examples, "%s documents example events", source)
	return source, examples
}

func markedSection(t *testing.T, path string) (string, bool) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "<!-- events:begin -->")
	if !ok {
		return "", false
	}
	section, _, ok := strings.Cut(rest, "<!-- events:end -->")
	return section, ok
}

// keysOf lists an event's keys, and those of its objects but args (the
// model's own), as "usage.input".
func keysOf(m map[string]any) []string {
	var keys []string
	for k, v := range m {
		keys = append(keys, k)
		if sub, ok := v.(map[string]any); ok && k != "args" {
			for sk := range sub {
				keys = append(keys, k+"."+sk)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func TestJSONEventsMatchDocs(t *testing.T) {
	source, examples := docExamples(t)
	printed := map[string]map[string]any{} // the first event of each type decode printed
	collect := func(out string) {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), "decode printed JSON: %s", line)
			typ, _ := m["type"].(string)
			if _, seen := printed[typ]; !seen {
				printed[typ] = m
			}
		}
	}

	// A run with tool calls, in a repository whose own config asks for
	// what it may not have (a warning).
	dir := testRepo(t, "greeting.txt", "Hello, wrold!\n", "demo.json", demoScript,
		".decode/config.toml", "allow = [\"bash(*)\"]\n",
		"pause.json", `{"responses": [{"calls": [{"name": "bash", "args": {"command": "rm notes.txt"}}]}]}`,
		"fails.json", `{"responses": [{"error": {"kind": "rate_limit", "message": "slow down", "status": 429}}]}`)
	env := decodeEnv(dir)
	out, stderr, code := decodeRun(t, dir, env, "", "run", "--json", "--mode", "edit", "-m", "script:demo.json", "fix the typo")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	collect(out)
	// A call that needs approval, headless: the run pauses.
	out, stderr, code = decodeRun(t, dir, env, "", "run", "--json", "-m", "script:pause.json", "remove notes.txt")
	require.Equal(t, ExitPaused, code, "stderr: %s", stderr)
	collect(out)
	// A long run in a small window: the context is compacted.
	long := testRepo(t, "big.txt", strings.Repeat("a line of the big file\n", 150), "long.json", longScript(10, "big.txt"),
		".decode/config.toml", "[models.\"script:long.json\"]\ncontext_window = 4000\nmax_output = 500\n")
	out, stderr, code = decodeRun(t, long, decodeEnv(long), "", "run", "--json", "-m", "script:long.json", "read it often")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	require.Contains(t, out, `"type":"compaction"`)
	collect(out)
	// A provider failure.
	out, _, code = decodeRun(t, dir, env, "", "ask", "--json", "-m", "script:fails.json", "hi")
	require.Equal(t, ExitProvider, code)
	collect(out)
	// A request retried: an OpenAI-compatible server that is busy once.
	srv := busyOnce(t)
	out, stderr, code = decodeRun(t, dir, append(env, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1"),
		"", "ask", "--json", "-m", "openai:gpt-test", "hi")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	collect(out)
	// A steering message needs a second process writing to the running
	// session at the right moment; its event is checked as the renderer
	// prints it.
	var buf bytes.Buffer
	j := newJSONRenderer(&buf, false)
	j.begin(&agent.Options{}, runInfo{Session: "s"})
	j.event(agent.Event{Type: agent.EventSteer, Text: "also the README"})
	collect(buf.String())

	documented := map[string]bool{}
	for _, ex := range examples {
		typ, _ := ex["type"].(string)
		documented[typ] = true
		got, ok := printed[typ]
		if !assert.True(t, ok, "%s documents a %q event that decode never printed", source, typ) {
			continue
		}
		assert.Equal(t, keysOf(ex), keysOf(got), "keys of the %q event: %s against decode's output", typ, source)
		assert.EqualValues(t, eventsVersion, got["v"])
	}
	for typ := range printed {
		assert.True(t, documented[typ], "decode printed a %q event that %s does not document", typ, source)
	}
}

// longScript is a script that reads path n times, then answers.
func longScript(n int, path string) string {
	var b strings.Builder
	b.WriteString(`{"model": "long", "responses": [`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"text": "Reading %d.", "calls": [{"name": "read", "args": {"path": %q}}]},`, i+1, path)
	}
	b.WriteString(`{"text": "Done."}]}`)
	return b.String()
}

// busyOnce is an OpenAI-compatible server that answers 429 once, then a
// streamed "hello".
func busyOnce(t *testing.T) *httptest.Server {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hello\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1,\"total_tokens\":11}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// lines decodes JSON Lines.
func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "a JSON line: %s", l)
		evs = append(evs, m)
	}
	return evs
}

func types(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["type"].(string))
	}
	return out
}

func TestJSONRenderer(t *testing.T) {
	clock := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	newJ := func(schema bool) (*jsonRenderer, *bytes.Buffer) {
		var buf bytes.Buffer
		j := newJSONRenderer(&buf, schema)
		j.now = func() time.Time { return clock }
		j.started = clock
		return j, &buf
	}

	t.Run("warnings before start follow it; invalid args stay JSON; content is capped", func(t *testing.T) {
		j, buf := newJ(false)
		j.warn("config ignored")
		j.begin(&agent.Options{}, runInfo{Session: "abc", Model: "script:x.json"})
		call := llm.ToolCall{ID: "c1", Name: "edit", Args: json.RawMessage(`{"path": "a.go"`)}
		j.event(agent.Event{Type: agent.EventToolCall, Call: &call, Decision: "allow"})
		big := strings.Repeat("é", maxEventContent) // two bytes a rune: cut inside one
		j.event(agent.Event{Type: agent.EventToolResult, Call: &call, Result: &llm.ToolResult{Content: big, IsError: true}})
		j.finish(agent.Outcome{Turns: 1}, nil)
		j.close(nil)

		evs := lines(t, buf.String())
		assert.Equal(t, []string{"start", "warning", "tool_call", "tool_result", "end"}, types(evs), "close after finish adds nothing")
		assert.Equal(t, "abc", evs[1]["session"], "the early warning carries the session")
		assert.Equal(t, `{"path": "a.go"`, evs[2]["args"], "arguments that are not JSON become a string")
		content := evs[3]["content"].(string)
		assert.LessOrEqual(t, len(content), maxEventContent)
		assert.True(t, strings.HasPrefix(big, content) && utf8Valid(content), "cut at a rune boundary")
		assert.Equal(t, true, evs[3]["truncated"])
		assert.Equal(t, true, evs[3]["is_error"])
		assert.Equal(t, "2026-11-30T08:00:00.000Z", evs[0]["ts"])
		assert.Nil(t, evs[4]["cost"], "no price for a script model")
		assert.Nil(t, evs[4]["result"])
	})

	t.Run("a failure before the run: error and end only", func(t *testing.T) {
		j, buf := newJ(false)
		j.warn("config ignored")
		j.close(usageErrorf("no prompt"))
		evs := lines(t, buf.String())
		assert.Equal(t, []string{"warning", "error", "end"}, types(evs))
		assert.Equal(t, "usage", evs[1]["kind"])
		assert.EqualValues(t, ExitUsage, evs[1]["exit"])
		assert.Equal(t, "error", evs[2]["status"])
		assert.Equal(t, "", evs[2]["session"])
	})

	t.Run("a pause is no error", func(t *testing.T) {
		j, buf := newJ(false)
		j.begin(&agent.Options{}, runInfo{Session: "abc"})
		j.finish(agent.Outcome{}, fmt.Errorf("waiting: %w", agent.ErrPaused))
		evs := lines(t, buf.String())
		assert.Equal(t, []string{"start", "end"}, types(evs))
		assert.Equal(t, "paused", evs[1]["status"])
		assert.EqualValues(t, ExitPaused, evs[1]["exit"])
	})

	t.Run("provider errors keep their kind; schema runs carry the result", func(t *testing.T) {
		j, buf := newJ(false)
		j.begin(&agent.Options{}, runInfo{Session: "abc"})
		j.finish(agent.Outcome{}, &llm.Error{Kind: llm.ErrAuth, Provider: "openai", Msg: "bad key"})
		evs := lines(t, buf.String())
		assert.Equal(t, "auth", evs[1]["kind"])
		assert.EqualValues(t, ExitProvider, evs[2]["exit"])

		j, buf = newJ(true)
		j.begin(&agent.Options{}, runInfo{Session: "abc", Model: "openai:gpt-4.1-mini"})
		j.finish(agent.Outcome{Text: `{"ok":true}`, Cost: 0.5}, nil)
		evs = lines(t, buf.String())
		assert.Equal(t, map[string]any{"ok": true}, evs[1]["result"])
		assert.Equal(t, 0.5, evs[1]["cost"])
	})

	t.Run("schema failure kind", func(t *testing.T) {
		err := &agent.SchemaError{Path: "s.json", Err: errors.New("missing ok")}
		assert.Equal(t, "schema", errorKind(err))
		assert.Equal(t, ExitError, ExitCode(err))
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
