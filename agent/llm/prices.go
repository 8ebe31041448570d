package llm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// pricesJSON is the price table: one data file, so that updating a price
// is an edit of prices.json and nothing else.
//
//go:embed prices.json
var pricesJSON []byte

// Price is what a model charges, in USD per million tokens.
type Price struct {
	// Input is the price of a prompt token that was not cached.
	Input float64 `json:"input"`
	// Output is the price of an answer (or reasoning) token.
	Output float64 `json:"output"`
	// CacheRead is the price of a prompt token read from the prompt cache;
	// 0 means the provider charges it as input.
	CacheRead float64 `json:"cache_read,omitempty"`
	// CacheWrite is the price of a prompt token written to the prompt
	// cache; 0 means the provider charges it as input.
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Tier is the price of requests with long prompts.
type Tier struct {
	// Tokens is the prompt length (Usage.Input) past which Price applies
	// to every token of the request.
	Tokens int `json:"tokens"`
	Price
}

// ModelInfo is what decode knows about a model: its context window and
// prices, as published by its provider on AsOf.
type ModelInfo struct {
	Provider string `json:"provider"`
	// Name is the model's name without provider or date suffix.
	Name string `json:"name"`
	// Context is the context window in tokens.
	Context int `json:"context"`
	// MaxOutput is the most tokens one answer may have.
	MaxOutput int `json:"max_output"`
	Price
	// Above, when set, replaces Price for requests with long prompts.
	Above *Tier `json:"above,omitempty"`
	// AsOf is the date the prices were taken from Source.
	AsOf   string `json:"as_of"`
	Source string `json:"source"`
}

// priceFile is the layout of prices.json.
type priceFile struct {
	Providers []struct {
		Provider string      `json:"provider"`
		AsOf     string      `json:"as_of"`
		Source   string      `json:"source"`
		Models   []ModelInfo `json:"models"`
	} `json:"providers"`
}

// parsePrices reads a price table, in file order.
func parsePrices(data []byte) ([]ModelInfo, error) {
	var f priceFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse price table: %w", err)
	}
	var out []ModelInfo
	for _, p := range f.Providers {
		for _, m := range p.Models {
			if m.Name == "" || m.Context <= 0 || m.MaxOutput <= 0 || m.Input <= 0 || m.Output <= 0 {
				return nil, fmt.Errorf("price table: %s model %q needs a name, a context window, a max_output and input and output prices", p.Provider, m.Name)
			}
			m.Provider, m.AsOf, m.Source = p.Provider, p.AsOf, p.Source
			out = append(out, m)
		}
	}
	return out, nil
}

// priceTable parses the embedded table once, on first use, so that a run
// that never prices anything (decode --version) never pays for it. A
// broken table (caught by the package's tests) prices nothing.
var priceTable = sync.OnceValue(func() []ModelInfo {
	models, err := parsePrices(pricesJSON)
	if err != nil {
		return nil
	}
	return models
})

// KnownModels returns the models of the price table, grouped by provider
// in the table's order.
func KnownModels() []ModelInfo {
	return append([]ModelInfo(nil), priceTable()...)
}

// LookupModel finds a model in the price table. name is "provider:model"
// or a bare model name; a dated or versioned variant
// ("claude-sonnet-4-5-20250929", "gpt-4.1-mini-2025-04-14") matches its
// model, and an OpenRouter name ("openrouter:anthropic/claude-sonnet-4.5")
// matches the vendor's model. Other providers (ollama, a custom server)
// have no prices.
func LookupModel(name string) (ModelInfo, bool) {
	return lookupIn(priceTable(), name)
}

func lookupIn(models []ModelInfo, name string) (ModelInfo, bool) {
	provider, model, ok := strings.Cut(name, ":")
	if !ok {
		provider, model = "", name
	}
	if vendor, rest, ok := strings.Cut(model, "/"); ok {
		if provider == "" || provider == "openrouter" {
			provider = vendor
		}
		model = rest
	}
	key := normalizeModel(model)
	best, found := ModelInfo{}, false
	for _, m := range models {
		if provider != "" && m.Provider != provider {
			continue
		}
		n := normalizeModel(m.Name)
		if key == n {
			return m, true
		}
		if strings.HasPrefix(key, n) && versionSuffix(key[len(n):]) && len(n) > len(best.Name) {
			best, found = m, true
		}
	}
	return best, found
}

// normalizeModel makes "claude-sonnet-4.5" (OpenRouter's spelling) and
// "claude-sonnet-4-5" (Anthropic's) the same key.
func normalizeModel(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), ".", "-")
}

// versionSuffix reports whether s is what providers append to a model name
// for a snapshot of the same model ("-20250929", "-2025-04-14",
// "-preview-09-2025", "-latest", "@20250929") rather than a different
// model ("-mini", "-pro", "-lite").
func versionSuffix(s string) bool {
	if strings.HasPrefix(s, "@") {
		return len(s) > 1
	}
	if !strings.HasPrefix(s, "-") || len(s) == 1 {
		return false
	}
	for _, seg := range strings.Split(s[1:], "-") {
		switch seg {
		case "latest", "preview", "exp":
			continue
		}
		if seg == "" || strings.Trim(seg, "0123456789") != "" {
			return false
		}
	}
	return true
}

// Cost prices u for the named model (see LookupModel). It reports false
// when the model is not in the price table.
func Cost(name string, u Usage) (float64, bool) {
	m, ok := LookupModel(name)
	if !ok {
		return 0, false
	}
	return m.Cost(u), true
}

// Cost prices u in USD. Usage.Input counts every prompt token: those read
// from the cache are priced at CacheRead, those written to it at
// CacheWrite, the rest at Input.
func (m ModelInfo) Cost(u Usage) float64 {
	p := m.Price
	if m.Above != nil && u.Input > m.Above.Tokens {
		p = m.Above.Price
	}
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	fresh := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	usd := float64(fresh)*p.Input + float64(u.CacheRead)*read +
		float64(u.CacheWrite)*write + float64(u.Output)*p.Output
	return usd / 1e6
}

// Window is a model's token budget: its context window and the longest
// answer it may give, both in tokens. Zero means unknown.
type Window struct {
	Context   int
	MaxOutput int
}

// Known reports whether the context window is known.
func (w Window) Known() bool { return w.Context > 0 }

// Window returns the model's token budget from the table.
func (m ModelInfo) Window() Window { return Window{Context: m.Context, MaxOutput: m.MaxOutput} }
