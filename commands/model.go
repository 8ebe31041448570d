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
	{name: "gemini", keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, baseEnv: "GOOGLE_GEMINI_BASE_URL", model: "gemini-2.5-flash"},
	{name: "openai", keyEnv: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", baseURL: "https://api.openai.com/v1", model: "gpt-4.1-mini"},
	{name: "anthropic", keyEnv: []string{"ANTHROPIC_API_KEY"}, baseEnv: "ANTHROPIC_BASE_URL", model: "claude-sonnet-4-5"},
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
		Msg: fmt.Sprintf("cannot tell the provider of model %q; write PROVIDER:MODEL with one of: %s, script", name, providerNames())}
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
// providers table, when no model is configured.
func (f *Factory) defaultModel() (string, error) {
	var vars []string
	for _, p := range providers {
		for _, k := range p.keyEnv {
			if f.Getenv(k) != "" {
				return p.name + ":" + p.model, nil
			}
			vars = append(vars, k)
		}
	}
	return "", &llm.Error{Kind: llm.ErrConfig, Provider: "decode",
		Msg: "no model configured and no API key set: set one of " + strings.Join(vars, ", ") +
			", or pass -m PROVIDER:MODEL (-m script:FILE plays a scripted conversation offline)"}
}

// newModel builds the model client for a name such as "openai:gpt-4.1-mini".
func (f *Factory) newModel(ctx context.Context, name string, cfg Config) (llm.Model, error) {
	if name == "" {
		var err error
		if name, err = f.defaultModel(); err != nil {
			return nil, err
		}
	}
	pname, model, err := splitModel(name)
	if err != nil {
		return nil, err
	}
	if pname == "script" {
		m, err := script.Load(model)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		return m, nil
	}
	p, _ := findProvider(pname)
	pc := cfg.Providers[pname]
	key, err := f.apiKey(p, pc)
	if err != nil {
		return nil, err
	}
	base := p.baseURL
	if pc.BaseURL != "" {
		base = pc.BaseURL
	}
	if v := f.Getenv(p.baseEnv); v != "" {
		base = v
	}
	var m llm.Model
	switch pname {
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{APIKey: key, BaseURL: base, Model: model})
	case "gemini":
		m, err = gemini.New(ctx, gemini.Config{APIKey: key, BaseURL: base, Model: model})
	default:
		m, err = openai.New(openai.Config{APIKey: key, BaseURL: base, Model: model, Provider: pname})
	}
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(m, llm.RetryPolicy{}), nil
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

// secretValues are the values of every key variable that is set, for
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
