package commands

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"decode/agent/llm"
	"decode/agent/llm/anthropic"
	"decode/agent/llm/gemini"
	"decode/agent/llm/openai"
	"decode/agent/llm/script"
)

// provider describes how to reach one provider.
type provider struct {
	name    string
	keyEnv  []string // variables holding the API key, first set wins
	baseEnv string   // variable overriding the base URL
	baseURL string   // default base URL
	model   string   // default model when chosen by key
	noKey   bool     // a local server that needs no key
}

var providers = []provider{
	{name: "gemini", keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, baseEnv: "GOOGLE_GEMINI_BASE_URL", baseURL: "https://generativelanguage.googleapis.com/", model: "gemini-2.5-flash"},
	{name: "openai", keyEnv: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", baseURL: "https://api.openai.com/v1", model: "gpt-4.1-mini"},
	{name: "anthropic", keyEnv: []string{"ANTHROPIC_API_KEY"}, baseEnv: "ANTHROPIC_BASE_URL", baseURL: "https://api.anthropic.com", model: "claude-sonnet-4-5"},
	{name: "openrouter", keyEnv: []string{"OPENROUTER_API_KEY"}, baseEnv: "OPENROUTER_BASE_URL", baseURL: "https://openrouter.ai/api/v1", model: "openai/gpt-4.1-mini"},
	{name: "deepseek", keyEnv: []string{"DEEPSEEK_API_KEY"}, baseEnv: "DEEPSEEK_BASE_URL", baseURL: "https://api.deepseek.com/v1", model: "deepseek-chat"},
	{name: "ollama", baseEnv: "OPENAI_BASE_URL", baseURL: "http://localhost:11434/v1", noKey: true},
}

func findProvider(name string) (provider, bool) {
	for _, p := range providers {
		if p.name == name {
			return p, true
		}
	}
	return provider{}, false
}

// prefixes infer the provider of a bare model name.
var prefixes = []struct{ prefix, provider string }{
	{"gemini-", "gemini"}, {"gpt-", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"},
	{"claude-", "anthropic"}, {"deepseek-", "deepseek"},
}

// splitModel turns a model name into provider and model, inferring the
// provider from a known prefix when none is given.
func splitModel(name string) (string, string, error) {
	if p, m, ok := strings.Cut(name, ":"); ok {
		if _, known := findProvider(p); !known && p != "script" {
			return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: p,
				Msg: fmt.Sprintf("unknown provider %q; known: %s, script", p, providerNames())}
		}
		if m == "" {
			return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: p, Msg: fmt.Sprintf("model name missing in %q; write %s:MODEL", name, p)}
		}
		return p, m, nil
	}
	for _, px := range prefixes {
		if strings.HasPrefix(name, px.prefix) {
			return px.provider, name, nil
		}
	}
	return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: "decode",
		Msg: fmt.Sprintf("cannot tell the provider of model %q; write PROVIDER:MODEL with one of: %s, script (decode models lists the known models)", name, providerNames())}
}

func providerNames() string {
	var names []string
	for _, p := range providers {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// defaultModel picks the provider whose key is set, in the order of the
// providers table, when no model is configured. It returns the model and
// the variable that chose it.
func (f *Factory) defaultModel() (string, string, error) {
	var vars []string
	for _, p := range providers {
		for _, k := range p.keyEnv {
			if f.Getenv(k) != "" {
				return p.name + ":" + p.model, k, nil
			}
			vars = append(vars, k)
		}
	}
	return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: "decode",
		Msg: "no model configured and no API key set: set one of " + strings.Join(vars, ", ") +
			", or pass -m PROVIDER:MODEL (-m script:FILE plays a scripted conversation offline)"}
}

// modelChoice is a resolved provider model: where to send requests and
// with which key.
type modelChoice struct {
	p     provider
	model string
	key   string
	base  string
}

// newModel builds the model client for a name such as "openai:gpt-4.1-mini"
// (empty: chosen by the keys that are set), wrapped in the one retry policy.
func (f *Factory) newModel(ctx context.Context, name string, cfg Config) (llm.Model, error) {
	if name == "" {
		var err error
		if name, _, err = f.defaultModel(); err != nil {
			return nil, err
		}
	}
	if pname, file, ok := strings.Cut(name, ":"); ok && pname == "script" {
		m, err := script.Load(file)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		return m, nil
	}
	mc, err := f.resolveModel(name, cfg)
	if err != nil {
		return nil, err
	}
	if w := mc.unknownModelWarning(); w != "" {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	m, err := mc.build(ctx)
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(m, llm.RetryPolicy{}), nil
}

// resolveModel finds the provider, key and base URL of a model name.
func (f *Factory) resolveModel(name string, cfg Config) (modelChoice, error) {
	pname, model, err := splitModel(name)
	if err != nil {
		return modelChoice{}, err
	}
	p, ok := findProvider(pname)
	if !ok {
		return modelChoice{}, &llm.Error{Kind: llm.ErrConfig, Provider: pname,
			Msg: fmt.Sprintf("%s models are not served by a provider; known: %s", pname, providerNames())}
	}
	pc := cfg.Providers[pname]
	key, err := f.apiKey(p, pc)
	if err != nil {
		return modelChoice{}, err
	}
	base, _ := f.baseURL(p, pc)
	return modelChoice{p: p, model: model, key: key, base: base}, nil
}

// baseURL is the endpoint in effect for p and what set it: the provider's
// variable, the config file, or the default.
func (f *Factory) baseURL(p provider, pc ProviderConfig) (string, string) {
	if v := f.Getenv(p.baseEnv); v != "" {
		return v, p.baseEnv
	}
	if pc.BaseURL != "" {
		return pc.BaseURL, "config"
	}
	return p.baseURL, "default"
}

// build makes the provider's adapter, without retries.
func (mc modelChoice) build(ctx context.Context) (llm.Model, error) {
	switch mc.p.name {
	case "anthropic":
		return anthropic.New(anthropic.Config{APIKey: mc.key, BaseURL: mc.base, Model: mc.model, HTTPClient: llm.HTTPClient()})
	case "gemini":
		return gemini.New(ctx, gemini.Config{APIKey: mc.key, BaseURL: mc.base, Model: mc.model, HTTPClient: llm.HTTPClient()})
	default:
		return openai.New(openai.Config{APIKey: mc.key, BaseURL: mc.base, Model: mc.model, Provider: mc.p.name, HTTPClient: llm.HTTPClient()})
	}
}

// unknownModelWarning is the warning for a model name the price table does
// not know, at a provider whose models it lists. The name is still tried:
// providers add models faster than decode's table follows. A custom base
// URL (a proxy, vLLM) serves names of its own and gets no warning.
func (mc modelChoice) unknownModelWarning() string {
	if mc.base != mc.p.baseURL {
		return ""
	}
	if _, ok := llm.LookupModel(mc.p.name + ":" + mc.model); ok {
		return ""
	}
	var known []string
	for _, m := range llm.KnownModels() {
		if m.Provider == mc.p.name {
			known = append(known, m.Name)
		}
	}
	if len(known) == 0 {
		return ""
	}
	return fmt.Sprintf("%s model %q is not in decode's table (known: %s); trying it anyway, its cost is unknown",
		mc.p.name, mc.model, strings.Join(known, ", "))
}

// costFunc prices a response for agent.Options.Cost: under the name the
// provider reported ("gpt-4.1-mini-2025-04-14"), else under the configured
// name. Unknown models cost 0. A script (-m script:FILE) whose "model"
// names a known model ("openai:gpt-4.1-mini") is priced like it.
func costFunc(configured string) func(reported string, u llm.Usage) float64 {
	pname, _, _ := strings.Cut(configured, ":")
	return func(reported string, u llm.Usage) float64 {
		if reported != "" {
			name := reported
			if !strings.Contains(reported, ":") && pname != "script" {
				name = pname + ":" + reported
			}
			if c, ok := llm.Cost(name, u); ok {
				return c
			}
		}
		c, _ := llm.Cost(configured, u)
		return c
	}
}

func (f *Factory) apiKey(p provider, pc ProviderConfig) (string, error) {
	vars := p.keyEnv
	if pc.APIKeyEnv != "" {
		vars = []string{pc.APIKeyEnv}
	}
	for _, k := range vars {
		if v := f.Getenv(k); v != "" {
			return v, nil
		}
	}
	if p.noKey {
		return "none", nil
	}
	return "", &llm.Error{Kind: llm.ErrAuth, Provider: p.name,
		Msg: fmt.Sprintf("no API key: set %s", strings.Join(vars, " or "))}
}

// secretNames are the names of every variable that may hold a key, for
// redaction in sessions and removal from tool environments.
func (f *Factory) secretNames(cfg Config) []string {
	var names []string
	for _, p := range providers {
		names = append(names, p.keyEnv...)
	}
	for _, pc := range cfg.Providers {
		if pc.APIKeyEnv != "" {
			names = append(names, pc.APIKeyEnv)
		}
	}
	return append(names, cfg.SecretEnv...)
}
