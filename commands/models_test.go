package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"decode/agent/llm"
)

func TestModelsCommandLine(t *testing.T) {
	cases := []struct {
		args []string
		want ModelsOptions
		err  string
	}{
		{args: nil, want: ModelsOptions{}},
		{args: []string{"--json"}, want: ModelsOptions{JSON: true}},
		{args: []string{"-C", "sub", "--json"}, want: ModelsOptions{Dir: "sub", JSON: true}},
		{args: []string{"gpt-5"}, err: "takes no arguments"},
	}
	for _, c := range cases {
		f, _, _ := providerTestFactory(t, nil)
		var got *ModelsOptions
		app := &cli.App{
			Writer: f.IO.Out, ErrWriter: f.IO.Err, ExitErrHandler: func(*cli.Context, error) {},
			Commands: []*cli.Command{NewCmdModels(f, func(_ *cli.Context, o *ModelsOptions) error { got = o; return nil })},
		}
		err := app.Run(append([]string{"decode", "models"}, c.args...))
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%v", c.args)
			continue
		}
		require.NoError(t, err, "%v", c.args)
		require.NotNil(t, got)
		got.F = nil
		assert.Equal(t, c.want, *got, "%v", c.args)
	}
}

func TestModelsText(t *testing.T) {
	f, stdout, stderr := providerTestFactory(t, map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-secret-value", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
	})
	require.NoError(t, modelsRun(&ModelsOptions{F: f}))
	out := stdout.String()
	assert.Empty(t, stderr.String())

	assert.Regexp(t, `(?m)^MODEL +CONTEXT +MAX OUT +INPUT +OUTPUT +CACHE READ +CACHE WRITE$`, out)
	assert.Regexp(t, `(?m)^anthropic:claude-sonnet-4-5 +\* +200k +64k +3\.00 +15\.00 +0\.30 +3\.75 +above 200k: 6\.00 in, 22\.50 out$`, out,
		"the default model chosen by the key is marked")
	assert.Regexp(t, `(?m)^gemini:gemini-2\.5-flash +1M +65k +0\.30 +2\.50 +0\.03 +-$`, out)
	assert.Regexp(t, `(?m)^deepseek:deepseek-reasoner +128k `, out)
	assert.Regexp(t, `(?m)^anthropic +ANTHROPIC_API_KEY set +https://api\.anthropic\.com \(default\)$`, out)
	assert.Regexp(t, `(?m)^gemini +GEMINI_API_KEY or GOOGLE_API_KEY not set +https://generativelanguage\.googleapis\.com/ \(default\)$`, out)
	assert.Regexp(t, `(?m)^openai +OPENAI_API_KEY not set +http://127\.0\.0\.1:8000/v1 \(OPENAI_BASE_URL\)$`, out)
	assert.Regexp(t, `(?m)^ollama +none needed +http://127\.0\.0\.1:8000/v1 \(OPENAI_BASE_URL\)$`, out)
	assert.Regexp(t, `(?m)^default model: anthropic:claude-sonnet-4-5 \(from ANTHROPIC_API_KEY\)$`, out)
	assert.Regexp(t, `as of 2025-11-20`, out)
	assert.NotContains(t, out, "sk-ant-secret-value", "key values are never shown")
	assert.NotRegexp(t, `(?m) +$`, out, "no trailing blanks")
}

func TestModelsDefaultFromConfigAndEnv(t *testing.T) {
	f, stdout, _ := providerTestFactory(t, map[string]string{"GEMINI_API_KEY": "k"})
	cfgDir := filepath.Join(f.configDir())
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "config.toml"),
		[]byte("model = \"gpt-4.1\"\n[providers.deepseek]\nbase_url = \"http://127.0.0.1:7/v1\"\napi_key_env = \"MY_DS_KEY\"\n"), 0o644))
	require.NoError(t, modelsRun(&ModelsOptions{F: f}))
	out := stdout.String()
	assert.Regexp(t, `(?m)^default model: gpt-4\.1 \(from config\)$`, out, "config beats the key")
	assert.Regexp(t, `(?m)^openai:gpt-4\.1 +\* `, out)
	assert.NotRegexp(t, `(?m)^gemini:gemini-2\.5-flash +\*`, out)
	assert.Regexp(t, `(?m)^deepseek +MY_DS_KEY not set +http://127\.0\.0\.1:7/v1 \(config\)$`, out)

	f2, stdout2, _ := providerTestFactory(t, map[string]string{"GEMINI_API_KEY": "k", "DECODE_MODEL": "ollama:qwen3"})
	f2.Getwd = f.Getwd
	require.NoError(t, modelsRun(&ModelsOptions{F: f2}))
	assert.Regexp(t, `(?m)^default model: ollama:qwen3 \(from DECODE_MODEL\)$`, stdout2.String())
	assert.NotContains(t, stdout2.String(), "*", "a model outside the table is not marked")
}

func TestModelsNoKey(t *testing.T) {
	f, stdout, _ := providerTestFactory(t, nil)
	require.NoError(t, modelsRun(&ModelsOptions{F: f}))
	assert.Regexp(t, `(?m)^default model: none; set an API key variable above, or pass -m PROVIDER:MODEL$`, stdout.String())
}

func TestModelsJSON(t *testing.T) {
	f, stdout, _ := providerTestFactory(t, map[string]string{"GOOGLE_API_KEY": "AIza-secret", "DEEPSEEK_BASE_URL": "http://127.0.0.1:9/v1"})
	require.NoError(t, modelsRun(&ModelsOptions{F: f, JSON: true}))
	assert.NotContains(t, stdout.String(), "AIza-secret")
	var rep struct {
		Unit    string `json:"unit"`
		Default struct {
			Model, From string
		} `json:"default"`
		Providers []struct {
			Name        string   `json:"name"`
			KeyVars     []string `json:"key_vars"`
			KeySet      string   `json:"key_set"`
			NeedsKey    bool     `json:"needs_key"`
			BaseURL     string   `json:"base_url"`
			BaseURLFrom string   `json:"base_url_from"`
			Models      []struct {
				Name      string  `json:"name"`
				Context   int     `json:"context"`
				Input     float64 `json:"input"`
				Output    float64 `json:"output"`
				CacheRead float64 `json:"cache_read"`
				AsOf      string  `json:"as_of"`
				Default   bool    `json:"default"`
			} `json:"models"`
		} `json:"providers"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	assert.Equal(t, "USD per million tokens", rep.Unit)
	assert.Equal(t, "gemini:gemini-2.5-flash", rep.Default.Model)
	assert.Equal(t, "GOOGLE_API_KEY", rep.Default.From)
	require.Len(t, rep.Providers, 6)
	g := rep.Providers[0]
	assert.Equal(t, "gemini", g.Name)
	assert.Equal(t, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, g.KeyVars)
	assert.Equal(t, "GOOGLE_API_KEY", g.KeySet)
	require.Len(t, g.Models, 4)
	assert.Equal(t, "gemini-2.5-flash", g.Models[0].Name)
	assert.True(t, g.Models[0].Default)
	assert.Equal(t, 1048576, g.Models[0].Context)
	assert.False(t, g.Models[1].Default)
	ds := rep.Providers[4]
	assert.Equal(t, "deepseek", ds.Name)
	assert.Equal(t, "http://127.0.0.1:9/v1", ds.BaseURL)
	assert.Equal(t, "DEEPSEEK_BASE_URL", ds.BaseURLFrom)
	ol := rep.Providers[5]
	assert.Equal(t, "ollama", ol.Name)
	assert.False(t, ol.NeedsKey)
	assert.Empty(t, ol.Models)
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "1M", tokens(1_048_576))
	assert.Equal(t, "200k", tokens(200_000))
	assert.Equal(t, "999", tokens(999))
	assert.Equal(t, "0.30", usd(0.3))
	assert.Equal(t, "10.00", usd(10))
	assert.Equal(t, "0.125", usd(0.125))
	assert.Equal(t, "-", usd(0))
	assert.Equal(t, "$0.0012", formatCost(0.00123))
	assert.Equal(t, "$12.35", formatCost(12.345))
	assert.Equal(t, "100 tokens in, 5 out", usageSummary(llmUsage(100, 5, 0), 0))
	assert.Equal(t, "100 tokens in (80 cached), 5 out, $0.0100", usageSummary(llmUsage(100, 5, 80), 0.01))
}

func llmUsage(in, out, cached int) llm.Usage {
	return llm.Usage{Input: in, Output: out, CacheRead: cached}
}
