// Package providers is the registry of the model providers decode can
// reach: their names, the variables holding their keys and endpoints, their
// default models, and how to build each one's adapter. It is the one place
// that knows every adapter; the loop sees only llm.Model.
package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/agent/llm/anthropic"
	"decode/agent/llm/gemini"
	"decode/agent/llm/openai"
	"decode/agent/llm/script"
	"decode/secrets"
)

// Provider describes how to reach one provider.
type Provider struct {
	Name string
	// KeyEnv lists the variables holding the API key; the first set wins.
	KeyEnv []string
	// BaseEnv is the variable overriding the base URL.
	BaseEnv string
	// HostEnv is a variable naming the server as its own tools do
	// (OLLAMA_HOST: "host:port" or a URL); it comes before BaseEnv.
	HostEnv string
	// BaseURL is the default endpoint.
	BaseURL string
	// Model is the default model when the provider is chosen by its key.
	Model string
	// NoKey marks a local server that needs no key.
	NoKey bool
	// build makes the adapter, without retries.
	build func(ctx context.Context, c Choice) (llm.Model, error)
}

func buildOpenAI(_ context.Context, c Choice) (llm.Model, error) {
	return openai.New(openai.Config{APIKey: c.Key, BaseURL: c.Base, Model: c.Model, Provider: c.Name, HTTPClient: c.httpClient()})
}

func buildGemini(ctx context.Context, c Choice) (llm.Model, error) {
	return gemini.New(ctx, gemini.Config{APIKey: c.Key, BaseURL: c.Base, Model: c.Model, HTTPClient: c.httpClient()})
}

func buildAnthropic(_ context.Context, c Choice) (llm.Model, error) {
	return anthropic.New(anthropic.Config{APIKey: c.Key, BaseURL: c.Base, Model: c.Model, HTTPClient: c.httpClient()})
}

// all is the registry, in the order a key set in the environment picks a
// default model.
var all = []Provider{
	{Name: "gemini", KeyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, BaseEnv: "GOOGLE_GEMINI_BASE_URL", BaseURL: "https://generativelanguage.googleapis.com/", Model: "gemini-2.5-flash", build: buildGemini},
	{Name: "openai", KeyEnv: []string{"OPENAI_API_KEY"}, BaseEnv: "OPENAI_BASE_URL", BaseURL: "https://api.openai.com/v1", Model: "gpt-4.1-mini", build: buildOpenAI},
	{Name: "anthropic", KeyEnv: []string{"ANTHROPIC_API_KEY"}, BaseEnv: "ANTHROPIC_BASE_URL", BaseURL: "https://api.anthropic.com", Model: "claude-sonnet-4-5", build: buildAnthropic},
	{Name: "openrouter", KeyEnv: []string{"OPENROUTER_API_KEY"}, BaseEnv: "OPENROUTER_BASE_URL", BaseURL: "https://openrouter.ai/api/v1", Model: "openai/gpt-4.1-mini", build: buildOpenAI},
	{Name: "deepseek", KeyEnv: []string{"DEEPSEEK_API_KEY"}, BaseEnv: "DEEPSEEK_BASE_URL", BaseURL: "https://api.deepseek.com/v1", Model: "deepseek-chat", build: buildOpenAI},
	{Name: "ollama", HostEnv: "OLLAMA_HOST", BaseEnv: "OPENAI_BASE_URL", BaseURL: "http://localhost:11434/v1", NoKey: true, build: buildOpenAI},
}

// Script is the name of the scripted provider (-m script:FILE), which
// plays a conversation from a file and is served by no endpoint.
const Script = "script"

// All returns the registered providers, in the order a set key picks one.
func All() []Provider { return append([]Provider(nil), all...) }

// Find returns the provider called name.
func Find(name string) (Provider, bool) {
	for _, p := range all {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Adapter names the folder of agent/llm whose adapter serves p ("openai"
// for every provider that speaks OpenAI's API).
func (p Provider) Adapter() string {
	switch p.Name {
	case "gemini", "anthropic":
		return p.Name
	}
	return "openai"
}

// prefixes infer the provider of a bare model name.
var prefixes = []struct{ prefix, provider string }{
	{"gemini-", "gemini"}, {"gpt-", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"},
	{"claude-", "anthropic"}, {"deepseek-", "deepseek"},
}

// Alias is a short model name for -m and what it stands for.
type Alias struct {
	Name  string `json:"alias"`
	Model string `json:"model"`
}

// aliases are resolved before a provider is inferred. gpt-5 and other
// bare names with a known prefix need none.
var aliases = []Alias{
	{"sonnet", "anthropic:claude-sonnet-4-5"},
	{"opus", "anthropic:claude-opus-4-1"},
	{"haiku", "anthropic:claude-haiku-4-5"},
	{"flash", "gemini:gemini-2.5-flash"},
	{"flash-lite", "gemini:gemini-2.5-flash-lite"},
	{"pro", "gemini:gemini-2.5-pro"},
}

// Aliases returns the alias table.
func Aliases() []Alias { return append([]Alias(nil), aliases...) }

// Expand returns the model an alias stands for, or name itself.
func Expand(name string) string {
	for _, a := range aliases {
		if a.Name == name {
			return a.Model
		}
	}
	return name
}

// Split turns a model name into provider and model, expanding an alias
// and inferring the provider from a known prefix when none is given.
func Split(name string) (string, string, error) {
	name = Expand(name)
	if p, m, ok := strings.Cut(name, ":"); ok {
		if _, known := Find(p); !known && p != Script {
			return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: p,
				Msg: fmt.Sprintf("unknown provider %q; known: %s, script", p, Names())}
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
		Msg: fmt.Sprintf("cannot tell the provider of model %q; write PROVIDER:MODEL with one of: %s, script (decode models lists the known models)", name, Names())}
}

// Names lists the providers' names, sorted, comma-separated.
func Names() string {
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Default picks the provider whose key is set, in the registry's order,
// when no model is configured. It returns the model and the variable that
// chose it.
func Default(getenv func(string) string) (string, string, error) {
	var vars []string
	for _, p := range all {
		for _, k := range p.KeyEnv {
			if getenv(k) != "" {
				return p.Name + ":" + p.Model, k, nil
			}
			vars = append(vars, k)
		}
	}
	return "", "", &llm.Error{Kind: llm.ErrConfig, Provider: "decode",
		Msg: "no model configured and no API key set: set one of " + strings.Join(vars, ", ") +
			", or pass -m PROVIDER:MODEL (-m script:FILE plays a scripted conversation offline)"}
}

// Settings are a provider's configured overrides (config.toml's
// [providers.NAME]).
type Settings struct {
	BaseURL string
	// APIKeyEnv names the variable holding the key, instead of the default.
	APIKeyEnv string
	// KeyCmd is the user's api_key_cmd for the provider: a command that
	// prints the key, run once per process when no variable holds one.
	KeyCmd string
	// Store is the key store decode auth login writes to, asked last.
	Store secrets.KeyStore
	// Proxy, when set (DECODE_PROXY), sends requests through a credential
	// proxy and reads no key at all; ProxyToken is its per-run token.
	Proxy, ProxyToken string
}

// Endpoint is the base URL in effect for p and what set it: the
// provider's variable, the config file ("config"), or "default".
func (p Provider) Endpoint(getenv func(string) string, s Settings) (string, string) {
	if v := strings.TrimSpace(getenv(p.HostEnv)); p.HostEnv != "" && v != "" {
		return hostURL(v), p.HostEnv
	}
	if v := getenv(p.BaseEnv); v != "" {
		return v, p.BaseEnv
	}
	if s.BaseURL != "" {
		return s.BaseURL, "config"
	}
	return p.BaseURL, "default"
}

// hostURL makes OLLAMA_HOST's "host", "host:port" or URL a base URL of
// Ollama's OpenAI-compatible API, as Ollama reads the variable: a bare
// host gets http:// and port 11434 (a URL keeps its scheme's port), and
// the API's /v1 is added.
func hostURL(v string) string {
	v = strings.TrimRight(v, "/")
	if !strings.Contains(v, "://") {
		host, path, _ := strings.Cut(v, "/")
		if _, _, err := net.SplitHostPort(host); err != nil {
			host = net.JoinHostPort(strings.Trim(host, "[]"), "11434")
		}
		v = "http://" + host
		if path != "" {
			v += "/" + path
		}
	}
	return v + "/v1"
}

// KeyVars are the variables p's key is read from under s.
func (p Provider) KeyVars(s Settings) []string {
	if s.APIKeyEnv != "" {
		return []string{s.APIKeyEnv}
	}
	return p.KeyEnv
}

// APIKey returns p's key from the first source that has one, in the
// documented order: the environment (CI), the user's api_key_cmd, then the
// key store (decode auth login).
func (p Provider) APIKey(getenv func(string) string, s Settings) (string, error) {
	key, _, err := p.KeySource(getenv, s)
	return key, err
}

// KeySource is APIKey and where the key came from: the variable's name,
// "api_key_cmd", or the key store's name.
func (p Provider) KeySource(getenv func(string) string, s Settings) (key, source string, err error) {
	vars := p.KeyVars(s)
	for _, k := range vars {
		if v := getenv(k); v != "" {
			return v, k, nil
		}
	}
	if s.KeyCmd != "" {
		v, err := secrets.KeyCommand(context.Background(), s.KeyCmd)
		if err != nil {
			return "", "", &llm.Error{Kind: llm.ErrAuth, Provider: p.Name, Msg: err.Error()}
		}
		return v, "api_key_cmd", nil
	}
	if s.Store != nil && !p.NoKey {
		switch v, where, err := locate(s.Store, p.Name); {
		case err == nil:
			return v, where, nil
		case !errors.Is(err, secrets.ErrNoKey):
			return "", "", &llm.Error{Kind: llm.ErrAuth, Provider: p.Name, Msg: err.Error()}
		}
	}
	if p.NoKey {
		return "none", "", nil
	}
	return "", "", &llm.Error{Kind: llm.ErrAuth, Provider: p.Name,
		Msg: fmt.Sprintf("no API key: set %s, set api_key_cmd under [providers.%s] in your config, or run decode auth login %s", strings.Join(vars, " or "), p.Name, p.Name)}
}

// locate asks store for provider's key and names the backend holding it.
func locate(store secrets.KeyStore, provider string) (string, string, error) {
	if l, ok := store.(secrets.Locator); ok {
		return l.Locate(provider)
	}
	v, err := store.Get(provider)
	return v, store.Name(), err
}

// Choice is a resolved provider model: where to send requests, with which
// key.
type Choice struct {
	Provider
	Model string
	Key   string
	Base  string
	// Idle fails a request that receives no byte for this long (no
	// headers, or a stream gone silent) with a retryable network error;
	// 0 means llm.DefaultIdleTimeout, negative means never.
	Idle time.Duration
	// Socket, when set, is the Unix socket of a credential proxy every
	// request is sent over (see ProxyChoice).
	Socket string
}

// httpClient is the client the adapter sends requests with.
func (c Choice) httpClient() *http.Client {
	idle := c.Idle
	if idle == 0 {
		idle = llm.DefaultIdleTimeout
	}
	client := llm.HTTPClient()
	if c.Socket != "" {
		client = dialSocket(client, c.Socket)
	}
	return llm.WithIdleTimeout(client, idle)
}

// Resolve finds the provider, key and base URL of a model name such as
// "openai:gpt-4.1-mini". settings are the configured overrides by provider.
func Resolve(name string, getenv func(string) string, settings map[string]Settings) (Choice, error) {
	pname, model, err := Split(name)
	if err != nil {
		return Choice{}, err
	}
	p, ok := Find(pname)
	if !ok {
		return Choice{}, &llm.Error{Kind: llm.ErrConfig, Provider: pname,
			Msg: fmt.Sprintf("%s models are not served by a provider; known: %s", pname, Names())}
	}
	s := settings[pname]
	if s.Proxy != "" && !p.NoKey {
		return ProxyChoice(p, model, s.Proxy, s.ProxyToken)
	}
	key, err := p.APIKey(getenv, s)
	if err != nil {
		return Choice{}, err
	}
	base, _ := p.Endpoint(getenv, s)
	return Choice{Provider: p, Model: model, Key: key, Base: base}, nil
}

// Build makes the provider's adapter, without retries.
func (c Choice) Build(ctx context.Context) (llm.Model, error) {
	return c.build(ctx, c)
}

// UnknownModelWarning is the warning for a model name the price table does
// not know, at a provider whose models it lists. The name is still tried:
// providers add models faster than decode's table follows. A custom base
// URL (a proxy, vLLM) serves names of its own and gets no warning.
func (c Choice) UnknownModelWarning() string {
	if c.Base != c.Provider.BaseURL {
		return ""
	}
	if _, ok := llm.LookupModel(c.Name + ":" + c.Model); ok {
		return ""
	}
	var known []string
	for _, m := range llm.KnownModels() {
		if m.Provider == c.Name {
			known = append(known, m.Name)
		}
	}
	if len(known) == 0 {
		return ""
	}
	return fmt.Sprintf("%s model %q is not in decode's table (known: %s); trying it anyway, its cost is unknown",
		c.Name, c.Model, strings.Join(known, ", "))
}

// IsScript reports whether name is a scripted model (script:FILE) and
// returns its file.
func IsScript(name string) (string, bool) {
	p, file, ok := strings.Cut(name, ":")
	return file, ok && p == Script
}

// LoadScript opens a scripted model (script:FILE).
func LoadScript(file string) (llm.Model, error) { return script.Load(file) }

// KeyNames are the names of every provider's key variables, for redaction
// in sessions and removal from tool environments.
func KeyNames() []string {
	var names []string
	for _, p := range all {
		names = append(names, p.KeyEnv...)
	}
	return names
}

// CostFunc prices a response for agent.Options.Cost: under the name the
// provider reported ("gpt-4.1-mini-2025-04-14"), else under the configured
// name. Unknown models cost 0. A script (-m script:FILE) whose "model"
// names a known model ("openai:gpt-4.1-mini") is priced like it.
func CostFunc(configured string) func(reported string, u llm.Usage) float64 {
	pname, _, _ := strings.Cut(configured, ":")
	return func(reported string, u llm.Usage) float64 {
		if reported != "" {
			name := reported
			if !strings.Contains(reported, ":") && pname != Script {
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
