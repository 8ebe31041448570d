package commands

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

func TestModelWindow(t *testing.T) {
	var cfg Config
	require.NoError(t, decodeConfig(&cfg, "config.toml", []byte(`
[models."ollama:qwen3"]
context_window = 32768

[models."ollama:big"]
context_window = 131072
max_output = 8192

[models."openai:gpt-4o"]
context_window = 64000
`)))
	w, ok := modelWindow(cfg, "ollama:qwen3")
	assert.True(t, ok)
	assert.Equal(t, llm.Window{Context: 32768, MaxOutput: 4096}, w, "max_output defaults to an eighth of the window")
	w, _ = modelWindow(cfg, "ollama:big")
	assert.Equal(t, llm.Window{Context: 131072, MaxOutput: 8192}, w)
	w, ok = modelWindow(cfg, "anthropic:claude-sonnet-4-5-20250929")
	assert.True(t, ok, "the built-in table knows every priced model")
	assert.Equal(t, llm.Window{Context: 200000, MaxOutput: 64000}, w)
	w, _ = modelWindow(cfg, "openai:gpt-4o")
	assert.Equal(t, llm.Window{Context: 64000, MaxOutput: 8000}, w, "config overrides the table")
	_, ok = modelWindow(cfg, "ollama:unknown")
	assert.False(t, ok)
	for _, m := range llm.KnownModels() {
		w := m.Window()
		assert.True(t, w.Known() && w.MaxOutput > 0 && w.MaxOutput < w.Context, "%s has a window and an output limit", m.Name)
	}
}

func TestCheckModels(t *testing.T) {
	bad := []string{
		"[models.\"ollama:x\"]\ncontext_window = -1\n",
		"[models.\"ollama:x\"]\ncontext_window = 1000\nmax_output = 1000\n",
		"[compaction]\nthreshold = 1.5\n",
	}
	for _, b := range bad {
		var cfg Config
		require.NoError(t, decodeConfig(&cfg, "config.toml", []byte(b)))
		assert.Error(t, checkModels(cfg), "refused: %s", b)
	}
	var cfg Config
	require.NoError(t, decodeConfig(&cfg, "config.toml", []byte("[models.\"ollama:x\"]\ncontext_window = 8000\n[compaction]\nthreshold = 0.8\n")))
	assert.NoError(t, checkModels(cfg))
}
