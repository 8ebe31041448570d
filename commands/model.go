package commands

import (
	"context"
	"fmt"
	"time"

	"decode/agent/llm"
	"decode/agent/llm/providers"
	"decode/secrets"
)

// providerSettings are the configured overrides of every provider.
func (f *Factory) providerSettings(cfg Config) map[string]providers.Settings {
	out := make(map[string]providers.Settings, len(cfg.Providers))
	proxy, token := f.Getenv("DECODE_PROXY"), f.Getenv("DECODE_PROXY_TOKEN")
	var store secrets.KeyStore
	if proxy == "" {
		store = f.keyStore() // with a proxy, no key store is even opened
	}
	for _, p := range providers.All() {
		pc := cfg.Providers[p.Name]
		out[p.Name] = providers.Settings{BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv, KeyCmd: pc.APIKeyCmd, Store: store, Proxy: proxy, ProxyToken: token}
	}
	for name, pc := range cfg.Providers {
		if _, ok := out[name]; !ok {
			out[name] = providers.Settings{BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv, KeyCmd: pc.APIKeyCmd, Store: store, Proxy: proxy, ProxyToken: token}
		}
	}
	return out
}

// defaultModel picks the provider whose key is set when no model is
// configured. It returns the model and the variable that chose it.
func (f *Factory) defaultModel() (string, string, error) {
	return providers.Default(f.Getenv)
}

// buildModel builds the model client for a name such as "openai:gpt-4.1-mini"
// (empty: chosen by the keys that are set), wrapped in the one retry policy
// (Factory.Model's default).
func (f *Factory) buildModel(ctx context.Context, name string, cfg Config) (llm.Model, error) {
	if name == "" {
		var err error
		if name, _, err = f.defaultModel(); err != nil {
			return nil, err
		}
	}
	if file, ok := providers.IsScript(name); ok {
		m, err := providers.LoadScript(file)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		return m, nil
	}
	mc, err := f.resolveModel(name, cfg)
	if err != nil {
		return nil, err
	}
	if mc.Idle, err = idleTimeout(cfg.IdleTimeout); err != nil {
		return nil, err
	}
	if w := mc.UnknownModelWarning(); w != "" {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	m, err := mc.Build(ctx)
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(m, llm.RetryPolicy{}), nil
}

// resolveModel finds the provider, key and base URL of a model name.
func (f *Factory) resolveModel(name string, cfg Config) (providers.Choice, error) {
	c, err := providers.Resolve(name, f.Getenv, f.providerSettings(cfg))
	switch {
	case err != nil || c.Key == "none":
	case f.Getenv("DECODE_PROXY") != "":
		f.redactor().Add(f.Getenv("DECODE_PROXY_TOKEN")) // the stand-in for a key
	default:
		f.redactor().Add(c.Key) // a key decode holds is masked at every exit
	}
	return c, err
}

// baseURL is the endpoint in effect for p and what set it: the provider's
// variable, the config file, or the default.
func (f *Factory) baseURL(p providers.Provider, pc ProviderConfig) (string, string) {
	return p.Endpoint(f.Getenv, providers.Settings{BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv})
}

// apiKey is p's key from the environment.
func (f *Factory) apiKey(p providers.Provider, pc ProviderConfig) (string, error) {
	return p.APIKey(f.Getenv, providers.Settings{BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv, KeyCmd: pc.APIKeyCmd, Store: f.keyStore()})
}

// costFunc prices a response for agent.Options.Cost.
func costFunc(configured string) func(reported string, u llm.Usage) float64 {
	return providers.CostFunc(configured)
}

// secretNames are the names of every variable that may hold a key, for
// redaction in sessions and removal from tool environments.
func (f *Factory) secretNames(cfg Config) []string {
	names := providers.KeyNames()
	for _, pc := range cfg.Providers {
		if pc.APIKeyEnv != "" {
			names = append(names, pc.APIKeyEnv)
		}
	}
	return append(names, cfg.SecretEnv...)
}

// idleTimeout reads idle_timeout (or --idle-timeout): a duration such as
// "90s"; "" means the default, "0" never times out.
func idleTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usageErrorf("idle timeout %q is not a duration such as 90s or 2m (0 turns it off)", v)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}
