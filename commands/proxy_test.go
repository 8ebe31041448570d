package commands

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envDump is the bash call of the first step: the tool prints its own
// environment and its parent's (the worker's), each also base64-encoded so
// that the redaction of known keys in tool output cannot hide one.
const envDump = `env; echo B64SELF:$(base64 -w0 /proc/self/environ); echo B64PARENT:$(base64 -w0 /proc/$PPID/environ); echo END-OF-ENV`

// fakeUpstream speaks one provider's streaming wire format for a 2-step
// task: a bash call (envDump) first, then, once the tool's result is in the
// request, the answer "Done.". It records each request's body and the
// headers a key can travel in.
type fakeUpstream struct {
	wire    string // openai, anthropic, gemini
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
	paths   []string
}

func (s *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.headers = append(s.headers, r.Header.Clone())
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	data := func(event string, v any) {
		b, _ := json.Marshal(v)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	args, _ := json.Marshal(map[string]string{"command": envDump})
	switch s.wire {
	case "openai":
		chunk := func(delta map[string]any, finish any) {
			data("", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		}
		if !strings.Contains(string(body), `"role":"tool"`) {
			chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]any{"name": "bash", "arguments": string(args)}}}}, nil)
			chunk(map[string]any{}, "tool_calls")
		} else {
			chunk(map[string]any{"role": "assistant", "content": "Done."}, nil)
			chunk(map[string]any{}, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case "anthropic":
		// Messages API streaming: the tool input arrives in pieces
		// (input_json_delta), the answer as text_delta with end_turn.
		data("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
		stop := "end_turn"
		if !strings.Contains(string(body), `"tool_result"`) {
			stop = "tool_use"
			data("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": map[string]any{}}})
			for i := 0; i < len(args); i += 16 {
				data("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args[i:min(i+16, len(args))])}})
			}
		} else {
			data("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			data("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": "Done."}})
		}
		data("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		data("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 7}})
		data("message_stop", map[string]any{"type": "message_stop"})
	case "gemini":
		part := map[string]any{"text": "Done."}
		if !strings.Contains(string(body), `"functionResponse"`) {
			part = map[string]any{"functionCall": map[string]any{"name": "bash", "args": map[string]string{"command": envDump}}}
		}
		data("", map[string]any{
			"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
				"content": map[string]any{"role": "model", "parts": []any{part}}}},
			"usageMetadata": map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19},
			"modelVersion":  "gemini-2.5-flash"})
	}
}

// TestProxyRunHoldsNoKey runs decode proxy with a key for each provider's
// wire format, and a worker — a separate decode process — with
// DECODE_PROXY and no key: the provider gets the real key in its own
// header, and a tool reading the worker's /proc environ finds none, nor
// does anything the worker sent.
func TestProxyRunHoldsNoKey(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "testscript puts decode on PATH")
	for _, tc := range []struct {
		wire, model, keyVar, baseVar, baseSuffix, path string
		// keyHeaders are the headers the adapter sends its key in, as
		// the provider receives them.
		keyHeaders map[string]string
	}{
		{"openai", "openai:gpt-4.1-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1", "/v1/chat/completions",
			map[string]string{"Authorization": "Bearer %s"}},
		{"anthropic", "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "", "/v1/messages",
			map[string]string{"X-Api-Key": "%s", "Authorization": "Bearer %s"}},
		{"gemini", "gemini:gemini-2.5-flash", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "", "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
			map[string]string{"X-Goog-Api-Key": "%s"}},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			key := "sk-held-by-the-proxy-" + tc.wire + "-0123456789"
			srv := &fakeUpstream{wire: tc.wire}
			up := httptest.NewServer(srv)
			defer up.Close()

			dir, err := os.MkdirTemp("", "dpx")
			require.NoError(t, err)
			defer os.RemoveAll(dir)
			sock := filepath.Join(dir, "p.sock")
			pf, _, perr := providerTestFactory(t, map[string]string{tc.keyVar: key, tc.baseVar: up.URL + tc.baseSuffix})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- proxyRun(ctx, &ProxyOptions{F: pf, Listen: "unix:" + sock}) }()
			defer func() { cancel(); <-done }()
			require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 5*time.Second, 10*time.Millisecond, "the proxy listens: %s", perr)
			fi, err := os.Stat(sock)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the user can reach the socket")

			work := filepath.Join(dir, "w")
			require.NoError(t, os.MkdirAll(work, 0o755))
			// Unconfined (--sandbox off): the sandbox's own PID namespace would
			// hide the worker's /proc entry from the tool.
			cmd := exec.Command(bin, "run", "--mode", "bypass", "--sandbox", "off", "-m", tc.model, "show the environment")
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DECODE_STORE=" + filepath.Join(dir, "store"), "DECODE_PROXY=unix:" + sock}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Run(), "the worker: %s", errb.String())
			assert.Equal(t, "Done.\n", out.String())

			require.Len(t, srv.bodies, 2, "a bash call, then the answer")
			for i, h := range srv.headers {
				assert.Equal(t, tc.path, srv.paths[i], "the model endpoint, forwarded")
				for name, format := range tc.keyHeaders {
					assert.Equal(t, fmt.Sprintf(format, key), h.Get(name), "request %d: the proxy put the key in %s", i+1, name)
				}
			}
			toolResult := srv.bodies[1]
			assert.Contains(t, toolResult, "END-OF-ENV", "the tool read the environments")
			envs := b64Environs(t, toolResult)
			assert.Contains(t, envs["B64PARENT"], "DECODE_PROXY=unix:", "the tool read the worker's environment")
			assert.Contains(t, envs["B64SELF"], "PATH=", "the tool read its own environment")
			for name, env := range envs {
				assert.NotContains(t, env, key, "%s: no key in the worker's or the tool's environment", name)
			}
			assert.NotContains(t, toolResult, key, "no key in the worker's or the tool's environment")
			assert.NotContains(t, strings.Join(srv.bodies, ""), "sk-held", "nor anywhere the worker sent")
			assert.NotContains(t, out.String()+errb.String(), "sk-held")
		})
	}
}

// b64Environs decodes the environments envDump printed in base64, found in
// a request body (the tool's result, JSON-escaped).
func b64Environs(t *testing.T, body string) map[string]string {
	envs := map[string]string{}
	for _, m := range regexp.MustCompile(`(B64SELF|B64PARENT):([A-Za-z0-9+/=]+)`).FindAllStringSubmatch(body, -1) {
		b, err := base64.StdEncoding.DecodeString(m[2])
		require.NoError(t, err, "%s is base64", m[1])
		envs[m[1]] = strings.ReplaceAll(string(b), "\x00", "\n")
	}
	require.Len(t, envs, 2, "the tool printed both environments: %s", body)
	return envs
}
