package providers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// Every alias names a provider and a model the price table knows, and
// Split expands it before inferring a provider.
func TestAliasesResolve(t *testing.T) {
	for _, a := range Aliases() {
		p, m, err := Split(a.Name)
		require.NoError(t, err, a.Name)
		assert.Equal(t, a.Model, p+":"+m)
		_, known := llm.LookupModel(a.Model)
		assert.True(t, known, "alias %s names %s, which the price table does not know", a.Name, a.Model)
	}
	p, m, err := Split("sonnet")
	require.NoError(t, err)
	assert.Equal(t, "anthropic", p)
	assert.Equal(t, "claude-sonnet-4-5", m)
	// A provider-qualified name is never taken for an alias.
	_, m, err = Split("ollama:pro")
	require.NoError(t, err)
	assert.Equal(t, "pro", m)
}

// OLLAMA_HOST is read as Ollama reads it and comes before OPENAI_BASE_URL.
func TestOllamaHost(t *testing.T) {
	p, ok := Find("ollama")
	require.True(t, ok)
	for host, want := range map[string]string{
		"127.0.0.1:8080":             "http://127.0.0.1:8080/v1",
		"0.0.0.0":                    "http://0.0.0.0:11434/v1",
		"localhost/":                 "http://localhost:11434/v1",
		"[::1]":                      "http://[::1]:11434/v1",
		"http://gpu.lan:11434":       "http://gpu.lan:11434/v1",
		"https://ollama.example.com": "https://ollama.example.com/v1",
	} {
		env := map[string]string{"OLLAMA_HOST": host, "OPENAI_BASE_URL": "http://elsewhere/v1"}
		base, from := p.Endpoint(func(k string) string { return env[k] }, Settings{})
		assert.Equal(t, want, base, host)
		assert.Equal(t, "OLLAMA_HOST", from)
	}
	base, from := p.Endpoint(func(string) string { return "" }, Settings{})
	assert.Equal(t, "http://localhost:11434/v1", base)
	assert.Equal(t, "default", from)
}
