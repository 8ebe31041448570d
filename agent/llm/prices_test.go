package llm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriceTableParses(t *testing.T) {
	models, err := parsePrices(pricesJSON)
	require.NoError(t, err, "prices.json must parse")
	want := []string{
		"gemini:gemini-2.5-flash", "gemini:gemini-2.5-pro", "gemini:gemini-2.5-flash-lite", "gemini:gemini-3-pro-preview",
		"openai:gpt-4.1", "openai:gpt-4.1-mini", "openai:gpt-4.1-nano", "openai:gpt-4o", "openai:gpt-4o-mini",
		"openai:o3", "openai:o4-mini", "openai:gpt-5", "openai:gpt-5-mini",
		"anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-1", "anthropic:claude-haiku-4-5",
		"deepseek:deepseek-chat", "deepseek:deepseek-reasoner",
	}
	var got []string
	seen := map[string]bool{}
	for _, m := range models {
		got = append(got, m.Provider+":"+m.Name)
		assert.False(t, seen[m.Name], "%s listed twice", m.Name)
		seen[m.Name] = true
		assert.NotEmpty(t, m.AsOf, "%s has a date", m.Name)
		assert.Regexp(t, `^https://`, m.Source, "%s has a source", m.Name)
		assert.Greater(t, m.Output, m.Input, "%s: output costs more than input", m.Name)
		if m.CacheRead > 0 {
			assert.Less(t, m.CacheRead, m.Input, "%s: cache reads are cheaper than input", m.Name)
		}
	}
	assert.Equal(t, want, got, "the known models, in file order")
	assert.Equal(t, models, KnownModels())
}

func TestParsePricesRejectsIncompleteModels(t *testing.T) {
	_, err := parsePrices([]byte(`{"providers":[{"provider":"x","models":[{"name":"m","context":1000,"input":1}]}]}`))
	assert.ErrorContains(t, err, `"m"`)
	_, err = parsePrices([]byte(`{"providers":`))
	assert.Error(t, err)
}

func TestLookupModel(t *testing.T) {
	cases := []struct {
		name, want string // want is provider:name, "" when unknown
	}{
		{"gpt-4.1-mini", "openai:gpt-4.1-mini"},
		{"openai:gpt-4.1-mini", "openai:gpt-4.1-mini"},
		{"gpt-4.1-mini-2025-04-14", "openai:gpt-4.1-mini"},
		{"gpt-4.1-2025-04-14", "openai:gpt-4.1"},
		{"gpt-4o-mini-2024-07-18", "openai:gpt-4o-mini"},
		{"o3-2025-04-16", "openai:o3"},
		{"o4-mini-2025-04-16", "openai:o4-mini"},
		{"claude-sonnet-4-5-20250929", "anthropic:claude-sonnet-4-5"},
		{"anthropic:claude-haiku-4-5-20251001", "anthropic:claude-haiku-4-5"},
		{"claude-sonnet-4-5@20250929", "anthropic:claude-sonnet-4-5"},
		{"gemini-2.5-flash", "gemini:gemini-2.5-flash"},
		{"gemini-2.5-flash-lite", "gemini:gemini-2.5-flash-lite"},
		{"gemini-2.5-flash-lite-preview-09-2025", "gemini:gemini-2.5-flash-lite"},
		{"gemini-2.5-flash-preview-09-2025", "gemini:gemini-2.5-flash"},
		{"deepseek:deepseek-chat", "deepseek:deepseek-chat"},
		{"openrouter:openai/gpt-4.1-mini", "openai:gpt-4.1-mini"},
		{"openrouter:anthropic/claude-sonnet-4.5", "anthropic:claude-sonnet-4-5"},
		{"GPT-4.1", "openai:gpt-4.1"},
		// Different models that merely share a prefix.
		{"gpt-5-nano", ""},
		{"o3-pro", ""},
		{"o3-mini", ""},
		{"gemini-2.5-flash-image", ""},
		{"gpt-4.1-mini-", ""},
		// A provider restricts the search.
		{"anthropic:gpt-4.1", ""},
		{"ollama:qwen3", ""},
		{"ollama:gpt-4.1", ""},
		{"script:demo.json", ""},
		{"", ""},
	}
	for _, c := range cases {
		m, ok := LookupModel(c.name)
		if c.want == "" {
			assert.False(t, ok, "%q should be unknown, got %s:%s", c.name, m.Provider, m.Name)
			continue
		}
		if assert.True(t, ok, "%q should be known", c.name) {
			assert.Equal(t, c.want, m.Provider+":"+m.Name, "match for %q", c.name)
		}
	}
}

func TestCost(t *testing.T) {
	sonnet, ok := LookupModel("claude-sonnet-4-5")
	require.True(t, ok)
	sonnet.Price = Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	sonnet.Above = &Tier{Tokens: 200_000, Price: Price{Input: 6, Output: 22.5, CacheRead: 0.6, CacheWrite: 7.5}}

	cases := []struct {
		name string
		m    ModelInfo
		u    Usage
		want float64
	}{
		{"input and output", sonnet, Usage{Input: 100_000, Output: 100_000}, 0.3 + 1.5},
		{"cache read and write are part of input", sonnet,
			Usage{Input: 100_000, CacheRead: 60_000, CacheWrite: 30_000, Output: 0},
			0.01*3 + 0.06*0.3 + 0.03*3.75},
		{"long prompt prices every token at the higher tier", sonnet,
			Usage{Input: 200_001, Output: 1000}, (200_001*6.0 + 1000*22.5) / 1e6},
		{"at the threshold the base tier applies", sonnet,
			Usage{Input: 200_000}, 200_000 * 3.0 / 1e6},
		{"no cache prices: cached tokens priced as input", ModelInfo{Price: Price{Input: 1, Output: 2}},
			Usage{Input: 1_000_000, CacheRead: 500_000, CacheWrite: 100_000}, 1},
		{"inconsistent usage never prices negative tokens", ModelInfo{Price: Price{Input: 1, Output: 2, CacheRead: 0.5}},
			Usage{Input: 10, CacheRead: 1_000_000}, 0.5},
		{"zero usage", sonnet, Usage{}, 0},
	}
	for _, c := range cases {
		assert.InDelta(t, c.want, c.m.Cost(c.u), 1e-9, c.name)
	}
}

func TestCostByName(t *testing.T) {
	m, ok := LookupModel("gpt-4.1-mini")
	require.True(t, ok)
	u := Usage{Input: 1530, Output: 5, CacheRead: 1280}
	got, ok := Cost("openai:gpt-4.1-mini-2025-04-14", u)
	require.True(t, ok)
	assert.InDelta(t, m.Cost(u), got, 1e-12, "a dated name costs what its model costs")
	assert.InDelta(t, (250*m.Input+1280*m.CacheRead+5*m.Output)/1e6, got, 1e-12)

	_, ok = Cost("ollama:qwen3", u)
	assert.False(t, ok, "a local model has no known price")
}

func TestVersionSuffix(t *testing.T) {
	for _, s := range []string{"-20250929", "-2025-04-14", "-latest", "-preview-09-2025", "-001", "@20250929", "-exp-03-25"} {
		assert.True(t, versionSuffix(s), s)
	}
	for _, s := range []string{"", "-", "-mini", "-pro", "-lite", "--1", "@", "x20250929", "-2025-", "-preview-mini"} {
		assert.False(t, versionSuffix(s), s)
	}
}

func BenchmarkLookupModel(b *testing.B) {
	priceTable()
	for b.Loop() {
		LookupModel("claude-sonnet-4-5-20250929")
	}
}
