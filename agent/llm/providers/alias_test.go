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
