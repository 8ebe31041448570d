package providers

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/agent/llm/conformance"
)

// Conformance returns the conformance suite's description of every
// registered provider: each built the way decode builds it (Resolve, then
// Build), with its key variable set and its base URL variable pointing at
// the suite's local server, and tested with its adapter's fixture set. A
// new provider adds a row to the registry and a testdata/conformance.json
// beside its adapter.
func conformanceProviders(root string) []conformance.Provider {
	var out []conformance.Provider
	for _, p := range All() {
		out = append(out, conformance.Provider{
			Name: p.Name,
			Dir:  filepath.Join(root, p.Adapter(), "testdata"),
			New:  builder(p),
			ExitCode: func(err error) int {
				if llm.AsError(err) != nil {
					return 4
				}
				return 1
			},
			ExitProvider: 4,
		})
	}
	return out
}

// builder builds p's model the way a run does, from the environment: its
// key variable set and its base URL variable pointing at base.
func builder(p Provider) func(t *testing.T, base, model string) llm.Model {
	return func(t *testing.T, base, model string) llm.Model {
		if p.Adapter() == "openai" {
			base += "/v1"
		}
		env := map[string]string{p.BaseEnv: base}
		if len(p.KeyEnv) > 0 {
			env[p.KeyEnv[0]] = "test-key-" + p.Name
		}
		c, err := Resolve(p.Name+":"+model, func(k string) string { return env[k] }, nil)
		require.NoError(t, err, "resolve %s:%s", p.Name, model)
		require.Equal(t, base, c.Base, "%s's base URL comes from %s", p.Name, p.BaseEnv)
		m, err := c.Build(context.Background())
		require.NoError(t, err)
		return m
	}
}

func TestProviderConformance(t *testing.T) {
	for _, p := range conformanceProviders("..") {
		t.Run(p.Name, func(t *testing.T) {
			conformance.Run(t, p)
		})
	}
}
