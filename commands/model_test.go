package commands

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"decode/agent/llm/providers"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/agent/llm/conformance"
)

func TestModelSelection(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		model string // -m, config or DECODE_MODEL after merging
		want  string
	}{
		{"only Gemini's key", map[string]string{"GEMINI_API_KEY": "k"}, "", "gemini:gemini-2.5-flash"},
		{"Google's key name", map[string]string{"GOOGLE_API_KEY": "k"}, "", "gemini:gemini-2.5-flash"},
		{"only OpenAI's key", map[string]string{"OPENAI_API_KEY": "k"}, "", "openai:gpt-4.1-mini"},
		{"only Anthropic's key", map[string]string{"ANTHROPIC_API_KEY": "k"}, "", "anthropic:claude-sonnet-4-5"},
		{"only OpenRouter's key", map[string]string{"OPENROUTER_API_KEY": "k"}, "", "openrouter:openai/gpt-4.1-mini"},
		{"only DeepSeek's key", map[string]string{"DEEPSEEK_API_KEY": "k"}, "", "deepseek:deepseek-chat"},
		{"several keys: the table's order", map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "", "openai:gpt-4.1-mini"},
		{"provider:model", map[string]string{"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}, "anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5"},
		{"claude- prefix", map[string]string{"ANTHROPIC_API_KEY": "k"}, "claude-opus-4-1", "anthropic:claude-opus-4-1"},
		{"gpt- prefix", map[string]string{"OPENAI_API_KEY": "k"}, "gpt-5", "openai:gpt-5"},
		{"o4 prefix", map[string]string{"OPENAI_API_KEY": "k"}, "o4-mini", "openai:o4-mini"},
		{"gemini- prefix", map[string]string{"GEMINI_API_KEY": "k"}, "gemini-2.5-pro", "gemini:gemini-2.5-pro"},
		{"deepseek- prefix", map[string]string{"DEEPSEEK_API_KEY": "k"}, "deepseek-reasoner", "deepseek:deepseek-reasoner"},
		{"ollama needs no key", nil, "ollama:qwen3", "ollama:qwen3"},
		{"openrouter vendor/model", map[string]string{"OPENROUTER_API_KEY": "k"}, "openrouter:anthropic/claude-sonnet-4.5", "openrouter:anthropic/claude-sonnet-4.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _, stderr := providerTestFactory(t, c.env)
			m, err := f.newModel(context.Background(), c.model, Config{})
			require.NoError(t, err)
			assert.Equal(t, c.want, m.Name())
			assert.Empty(t, stderr.String(), "no warning for a known model")
		})
	}
}

func TestModelSelectionFailures(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		model string
		kind  llm.ErrorKind
		msgs  []string
	}{
		{"no key and no model", nil, "", llm.ErrConfig,
			[]string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "-m PROVIDER:MODEL"}},
		{"a provider without its key", map[string]string{"GEMINI_API_KEY": "k"}, "anthropic:claude-sonnet-4-5", llm.ErrAuth,
			[]string{"ANTHROPIC_API_KEY"}},
		{"unknown provider", nil, "frob:x", llm.ErrConfig, []string{`unknown provider "frob"`, "anthropic, deepseek, gemini, ollama, openai, openrouter"}},
		{"no model after the provider", nil, "openai:", llm.ErrConfig, []string{"openai:MODEL"}},
		{"bare name without a known prefix", nil, "llama3", llm.ErrConfig, []string{`"llama3"`, "PROVIDER:MODEL", "decode models"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _, _ := providerTestFactory(t, c.env)
			_, err := f.newModel(context.Background(), c.model, Config{})
			require.Error(t, err)
			e := llm.AsError(err)
			require.NotNil(t, e, "a provider error: %v", err)
			assert.Equal(t, c.kind, e.Kind)
			assert.Equal(t, ExitProvider, ExitCode(err), "exit 4")
			for _, m := range c.msgs {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestUnknownModelWarns(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		model string
		warn  string // "" for none
	}{
		{"unknown OpenAI model", map[string]string{"OPENAI_API_KEY": "k"}, "openai:gpt-9",
			`openai model "gpt-9" is not in decode's table (known: gpt-4.1, gpt-4.1-mini`},
		{"unknown Anthropic model", map[string]string{"ANTHROPIC_API_KEY": "k"}, "claude-sonnet-9",
			`anthropic model "claude-sonnet-9" is not in decode's table (known: claude-sonnet-4-5, claude-opus-4-1, claude-haiku-4-5)`},
		{"a dated snapshot of a known model", map[string]string{"ANTHROPIC_API_KEY": "k"}, "claude-sonnet-4-5-20250929", ""},
		{"a custom endpoint serves its own names", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "openai:Qwen/Qwen3-8B", ""},
		{"local models have no table", nil, "ollama:qwen3", ""},
		{"OpenRouter has no table", map[string]string{"OPENROUTER_API_KEY": "k"}, "openrouter:x/y", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _, stderr := providerTestFactory(t, c.env)
			m, err := f.newModel(context.Background(), c.model, Config{})
			require.NoError(t, err, "an unknown model name is still tried")
			assert.NotNil(t, m)
			if c.warn == "" {
				assert.Empty(t, stderr.String())
				return
			}
			assert.Contains(t, stderr.String(), "decode: warning: "+c.warn)
			assert.Contains(t, stderr.String(), "its cost is unknown")
		})
	}
}

func TestBaseURLPrecedence(t *testing.T) {
	p, _ := providers.Find("openai")
	f, _, _ := providerTestFactory(t, nil)
	url, from := f.baseURL(p, ProviderConfig{})
	assert.Equal(t, "https://api.openai.com/v1", url)
	assert.Equal(t, "default", from)
	url, from = f.baseURL(p, ProviderConfig{BaseURL: "http://127.0.0.1:8000/v1"})
	assert.Equal(t, "http://127.0.0.1:8000/v1", url)
	assert.Equal(t, "config", from)
	f, _, _ = providerTestFactory(t, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
	url, from = f.baseURL(p, ProviderConfig{BaseURL: "http://127.0.0.1:8000/v1"})
	assert.Equal(t, "http://127.0.0.1:9/v1", url, "the variable wins over config")
	assert.Equal(t, "OPENAI_BASE_URL", from)

	for name, want := range map[string]string{
		"openrouter": "https://openrouter.ai/api/v1", "deepseek": "https://api.deepseek.com/v1",
		"ollama": "http://localhost:11434/v1", "anthropic": "https://api.anthropic.com",
		"gemini": "https://generativelanguage.googleapis.com/",
	} {
		p, ok := providers.Find(name)
		require.True(t, ok)
		got, _ := (&Factory{Getenv: func(string) string { return "" }}).baseURL(p, ProviderConfig{})
		assert.Equal(t, want, got, "%s's default endpoint", name)
	}
}

// TestShorthandsReachTheirBaseURL runs `decode ask` with each OpenAI-style
// shorthand, its base URL variable pointing at a local server: the request
// must arrive there, with the provider's key and the model name as given.
func TestShorthandsReachTheirBaseURL(t *testing.T) {
	dir := filepath.Join("..", "agent", "llm", "openai", "testdata")
	cases := []struct {
		model, keyEnv, baseEnv, wantModel, wantAuth string
	}{
		{"openrouter:anthropic/claude-sonnet-4.5", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", "anthropic/claude-sonnet-4.5", "Bearer key-openrouter"},
		{"deepseek:deepseek-chat", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "deepseek-chat", "Bearer key-deepseek"},
		{"deepseek-reasoner", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "deepseek-reasoner", "Bearer key-deepseek"},
		{"ollama:qwen3", "", "OPENAI_BASE_URL", "qwen3", ""},
		{"openai:gpt-4.1-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", "gpt-4.1-mini", "Bearer key-openai"},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			srv := conformance.NewServer(t, dir, "/v1/chat/completions")
			srv.Queue(conformance.Reply{File: "text.sse"})
			env := map[string]string{c.baseEnv: srv.URL + "/v1"}
			if c.keyEnv != "" {
				env[c.keyEnv] = "key-" + strings.ToLower(strings.TrimSuffix(c.keyEnv, "_API_KEY"))
			}
			f, stdout, stderr := providerTestFactory(t, env)
			code := Main([]string{"decode", "ask", "--no-session", "-m", c.model, "hi"}, f)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Equal(t, "Hello, world! éè\n", stdout.String())

			reqs := srv.Requests()
			require.Len(t, reqs, 1, "one request, to the overridden base URL")
			var body struct {
				Model string `json:"model"`
			}
			require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
			assert.Equal(t, c.wantModel, body.Model)
			if c.wantAuth != "" {
				assert.Equal(t, c.wantAuth, reqs[0].Header.Get("Authorization"))
			}
		})
	}
}

// TestPartialAnswerNeverSavedAsComplete: a stream broken mid-answer is
// retried whole; the person sees a retry note, and the session holds only
// the complete retried answer.
func TestPartialAnswerNeverSavedAsComplete(t *testing.T) {
	// Anthropic's text fixture breaks after "Hello, world" of "Hello, world!".
	dir := filepath.Join("..", "agent", "llm", "anthropic", "testdata")
	srv := conformance.NewServer(t, dir, "/v1/messages")
	srv.Queue(conformance.Reply{File: "text.sse", Reset: true}, conformance.Reply{File: "text.sse"})
	env := map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL}
	f, stdout, stderr := providerTestFactory(t, env)

	code := Main([]string{"decode", "ask", "-m", "anthropic:claude-sonnet-4-5", "say hello"}, f)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Len(t, srv.Requests(), 2, "the broken attempt and the retry")
	assert.Regexp(t, `(?m)^decode: anthropic: network: .*; retrying \(attempt 2\)$`, stderr.String(), "the renderer notes the retry")
	assert.Equal(t, "Hello, world!\n", stdout.String(),
		"stdout, not a terminal, holds the answer until its response ends: the partial text never reaches it")
	assert.Regexp(t, `decode: 1 model request, 4621 tokens in \(3400 cached\), 9 out, \$0\.0\d+`, stderr.String(),
		"the summary shows cached tokens and the cost of a known model")

	f2, log, _ := providerTestFactory(t, env)
	f2.Getwd = f.Getwd
	f2.Getenv = f.Getenv
	require.Equal(t, 0, Main([]string{"decode", "log", "--jsonl", "@"}, f2))
	var answers []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var e struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Type != "assistant" {
			continue
		}
		var d struct {
			Message llm.Message `json:"message"`
			Cost    float64     `json:"cost"`
		}
		require.NoError(t, json.Unmarshal(e.Data, &d))
		answers = append(answers, d.Message.Text)
		assert.Positive(t, d.Cost, "the entry records its cost")
	}
	assert.Equal(t, []string{"Hello, world!"}, answers, "one assistant entry, the complete answer only")
}

func TestPartialAnswerQuiet(t *testing.T) {
	dir := filepath.Join("..", "agent", "llm", "anthropic", "testdata")
	srv := conformance.NewServer(t, dir, "/v1/messages")
	srv.Queue(conformance.Reply{File: "text.sse", Reset: true}, conformance.Reply{File: "text.sse"})
	f, stdout, stderr := providerTestFactory(t, map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL})

	require.Equal(t, 0, Main([]string{"decode", "ask", "-q", "--no-session", "-m", "claude-sonnet-4-5", "say hello"}, f), "stderr: %s", stderr)
	assert.Equal(t, "Hello, world!\n", stdout.String(), "with -q, only the complete answer")
	assert.Empty(t, stderr.String())
}

func TestCostFunc(t *testing.T) {
	u := llm.Usage{Input: 1000, Output: 100}
	mini, _ := llm.LookupModel("openai:gpt-4.1-mini")
	haiku, _ := llm.LookupModel("anthropic:claude-haiku-4-5")

	cost := costFunc("openai:gpt-4.1-mini")
	assert.InDelta(t, mini.Cost(u), cost("gpt-4.1-mini-2025-04-14", u), 1e-12, "the reported name")
	assert.InDelta(t, mini.Cost(u), cost("", u), 1e-12, "no reported name: the configured one")
	assert.InDelta(t, mini.Cost(u), cost("some-proxy-alias", u), 1e-12, "an unknown reported name: the configured one")
	assert.Zero(t, costFunc("ollama:qwen3")("qwen3", u), "a local model costs nothing known")
	assert.InDelta(t, haiku.Cost(u), costFunc("script:demo.json")("anthropic:claude-haiku-4-5", u), 1e-12,
		"a script naming a known model is priced like it")
	assert.InDelta(t, haiku.Cost(u), costFunc("script:demo.json")("claude-haiku-4-5", u), 1e-12)
}
