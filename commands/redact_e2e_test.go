package commands

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plantedCase is one line of the blind corpus in ../secrets/testdata.
type plantedCase struct {
	ID, Shape, Value, Context, Note string
}

func loadPlanted(t *testing.T, name string) []plantedCase {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "secrets", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var out []plantedCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c plantedCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		out = append(out, c)
	}
	return out
}

// leaked reports whether text still holds any telling part of value: the
// value, its JSON form, or one of its lines of 16 bytes or more.
func leaked(text, value string) bool {
	js, _ := json.Marshal(value)
	if strings.Contains(text, value) || strings.Contains(text, string(js[1:len(js)-1])) {
		return true
	}
	for _, line := range strings.Split(value, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(text, line) {
			return true
		}
	}
	return false
}

// fakeOpenAI speaks OpenAI's chat completions stream: a bash call first,
// then, once a tool result is in the request, an answer that repeats every
// planted secret. It records every request body.
type fakeOpenAI struct {
	mu     sync.Mutex
	bodies []string
	auths  []string
	answer string
	// command is the bash call of the first step (a default plants a
	// file's secrets and spills).
	command string
}

func (s *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.auths = append(s.auths, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if !strings.Contains(string(body), `"role":"tool"`) {
		command := s.command
		if command == "" {
			command = "cat planted.txt; seq 1 2500"
		}
		args, _ := json.Marshal(map[string]string{"command": command})
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "bash", "arguments": string(args)}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		// Streamed in small pieces, so secrets straddle chunks.
		for i := 0; i < len(s.answer); i += 7 {
			chunk(map[string]any{"content": s.answer[i:min(i+7, len(s.answer))]}, nil)
		}
		chunk(map[string]any{}, "stop")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestPlantedSecretsNeverLeave plants every secret of the blind corpus in a
// file a tool prints, in the prompt, and in the model's answer, and checks
// each exit: stdout and stderr (text and --json), decode log, every object
// in the session store, the bash spill file, hook input, and the request
// bodies the provider received.
func TestPlantedSecretsNeverLeave(t *testing.T) {
	planted := loadPlanted(t, "secrets.jsonl")
	harmless := loadPlanted(t, "nonsecrets.jsonl")
	var file strings.Builder
	for _, c := range planted {
		file.WriteString(c.Context + "\n")
	}
	for _, c := range harmless {
		file.WriteString(c.Context + "\n")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	runGit(t, repo, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "planted.txt"), []byte(file.String()), 0o644))
	hookLog := filepath.Join(dir, "hook-input.jsonl")
	cfgDir := filepath.Join(dir, ".config", "decode")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(fmt.Sprintf(
		"[hooks]\nrun_start = \"cat >> %[1]s\"\nbefore_tool = \"cat >> %[1]s\"\nafter_tool = \"cat >> %[1]s\"\nbefore_finish = \"cat >> %[1]s\"\n", hookLog)), 0o644))
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	t.Setenv("TMPDIR", tmp)

	srv := &fakeOpenAI{answer: "Found these:\n" + file.String()}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const key = "sk-test-0123456789abcdefghijKLMNOP"
	env := map[string]string{
		"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, ".config"), "PATH": os.Getenv("PATH"),
		"OPENAI_API_KEY": key, "OPENAI_BASE_URL": ts.URL + "/v1",
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": dir,
	}
	run := func(args ...string) (string, string, int) {
		f, out, errb := providerTestFactory(t, env)
		f.Getwd = func() (string, error) { return repo, nil }
		code := Main(append([]string{"decode"}, args...), f)
		return out.String(), errb.String(), code
	}
	prompt := "Check these:\n" + planted[0].Context + "\n" + planted[38].Context
	exits := map[string]string{}
	o1, e1, code := run("run", "--mode", "bypass", "--json", "-m", "openai:gpt-4.1-mini", prompt)
	require.Equal(t, 0, code, "the --json run: %s", e1)
	o2, e2, code := run("run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", prompt)
	require.Equal(t, 0, code, "the text run: %s", e2)
	require.Contains(t, o2, "Found these:", "the answer was printed")
	exits["stdout"], exits["stderr"] = o1+o2, e1+e2
	o3, e3, _ := run("log", "@")
	o4, e4, _ := run("log", "--jsonl", "@")
	o5, e5, _ := run("log", "--json")
	exits["decode log"] = o3 + e3 + o4 + e4 + o5 + e5
	objects := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	objects.Dir = repo
	all, err := objects.Output()
	require.NoError(t, err)
	exits["session objects"] = string(all)
	hooks, err := os.ReadFile(hookLog)
	require.NoError(t, err)
	require.Contains(t, string(hooks), `"event":"after_tool"`, "the hooks ran")
	exits["hook input"] = string(hooks)
	var spills strings.Builder
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "decode-bash-") {
			b, _ := os.ReadFile(p)
			spills.Write(b)
		}
		return nil
	})
	require.Contains(t, spills.String(), "\n2500\n", "the bash output spilled to a file")
	exits["spill files"] = spills.String()
	require.GreaterOrEqual(t, len(srv.bodies), 4)
	exits["request bodies"] = strings.Join(srv.bodies, "\n")
	require.Contains(t, exits["request bodies"], "2500", "the tool result reached the model")

	leaks := 0
	for exit, text := range exits {
		assert.NotContains(t, text, key, "the API key in %s", exit)
		for _, c := range planted {
			if leaked(text, c.Value) {
				leaks++
				t.Errorf("%s (%s) leaked into %s", c.ID, c.Shape, exit)
			}
		}
	}
	kept := 0
	for _, c := range harmless {
		js, _ := json.Marshal(c.Value) // escapes <, > and & as Go does by default
		plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(js[1 : len(js)-1]))
		if objs := exits["session objects"]; strings.Contains(objs, string(js[1:len(js)-1])) || strings.Contains(objs, plain) {
			kept++
		} else {
			t.Logf("non-secret %s (%s) not found in the session: %q", c.ID, c.Note, c.Value)
		}
	}
	t.Logf("%d planted secrets × %d exits: %d leaks; %d of %d non-secrets kept in the session", len(planted), len(exits), leaks, kept, len(harmless))
	assert.GreaterOrEqual(t, kept, len(harmless)-maxFalseE2E, "non-secrets survive")
}

// maxFalseE2E is how many non-secrets the session may lose to redaction.
const maxFalseE2E = 0

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}
