package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/tools/sandbox"
)

// firstRequestBudget is the README's budget for the bench task's first
// model request (Performance: "≤ 5,000 bytes with ≥ 8 tools").
const firstRequestBudget, firstRequestMinTools = 5000, 8

// benchTask is scripts/bench's prompt, and benchCwd the length of its
// working directory (mktemp -d's /tmp/tmp.XXXXXXXXXX plus /task): the
// request below is measured as if it ran there, so the figure is the
// bench's whatever this test's temp dir is called.
const (
	benchTask = "Make out.txt contain the contents of in.txt in upper case, then say DONE."
	benchCwd  = "/tmp/tmp.XXXXXXXXXX/task"
)

// TestFirstRequestOnTheWire runs decode run on the bench task against a
// local OpenAI-compatible server and measures the first request body as
// sent: system prompt, user message, every tool's schema and the JSON
// framing. bypass is what scripts/bench measures; default mode with the
// sandbox working is the largest, as its bash schema offers the way out of
// the sandbox. Both must keep the README's budget.
func TestFirstRequestOnTheWire(t *testing.T) {
	sandboxed := len(sandbox.Probe(context.Background(), "", os.Environ()).Layers) > 0
	for _, mode := range []string{"bypass", "default"} {
		t.Run(mode, func(t *testing.T) {
			body := firstRequestOf(t, mode)
			var req struct {
				Messages []json.RawMessage `json:"messages"`
				Tools    []struct {
					Function struct {
						Name       string          `json:"name"`
						Parameters json.RawMessage `json:"parameters"`
					} `json:"function"`
				} `json:"tools"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &req))
			bash := ""
			for _, tool := range req.Tools {
				if tool.Function.Name == "bash" {
					bash = string(tool.Function.Parameters)
				}
			}
			require.NotEmpty(t, bash, "run offers bash")
			if mode == "bypass" {
				assert.NotContains(t, bash, "escalate", "bypass runs commands unconfined: no way out to offer")
			} else if sandboxed {
				assert.Contains(t, bash, `"escalate"`, "default mode in the sandbox offers the escalation")
			} else {
				t.Log("no sandbox layer works here: the escalation arguments are not measured")
			}
			t.Logf("%s: first request %d bytes (working directory counted as %d bytes), %d messages, %d tools",
				mode, len(body), len(benchCwd), len(req.Messages), len(req.Tools))
			assert.LessOrEqual(t, len(body), firstRequestBudget, "the bench task's first request in %s mode, in bytes", mode)
			assert.GreaterOrEqual(t, len(req.Tools), firstRequestMinTools, "while offering at least 8 tools")
		})
	}
}

// firstRequestOf runs the bench task in a fresh repository in mode and
// returns the first request body, with the repository's path replaced by
// one as long as the bench's.
func firstRequestOf(t *testing.T, mode string) string {
	t.Helper()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []string{`{"role":"assistant","content":"DONE"},"finish_reason":null`, `{},"finish_reason":"stop"`} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	repo := filepath.Join(t.TempDir(), "task")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	runGit(t, repo, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "in.txt"), []byte("hello bench\n"), 0o644))
	f, out, errb := providerTestFactory(t, map[string]string{
		"PATH": os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM": "1",
		"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1",
	})
	f.Getwd = func() (string, error) { return repo, nil }
	code := Main([]string{"decode", "run", "-q", "--mode", mode, "-m", "openai:gpt-4.1-mini", benchTask}, f)
	require.Equal(t, 0, code, "stderr: %s", errb)
	require.Equal(t, "DONE\n", out.String())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, bodies)
	require.Equal(t, 1, strings.Count(bodies[0], repo), "the working directory appears once, in the environment lines")
	return strings.Replace(bodies[0], repo, benchCwd, 1)
}
