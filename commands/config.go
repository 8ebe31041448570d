package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/BurntSushi/toml"

	"decode/secrets"
	"decode/tools/mcp"
)

// Config is decode's configuration after merging, lowest to highest
// precedence: defaults, the user's config.toml, the repository's
// .decode/config.toml, DECODE_* variables, flags.
type Config struct {
	// unknown are warnings for keys a config file set that decode does not
	// know (a typo such as modle = …), naming the key and the file.
	unknown []string
	// files says, for -v, which config files were looked for and what
	// became of each ("/path (read)", "/path (not found)").
	files []string
	// modelFrom is what set Model: a config file's path or DECODE_MODEL.
	modelFrom string

	Model    string   `toml:"model"`
	Mode     string   `toml:"mode"`
	MaxTurns int      `toml:"max_turns"`
	Allow    []string `toml:"allow"`
	Deny     []string `toml:"deny"`
	// SecretEnv names extra variables to keep out of tools and sessions.
	SecretEnv []string `toml:"secret_env"`
	// ModelSeesSecretShapes lets text that merely has a secret's shape
	// (an AWS key id, a JWT, a password in a URL) reach the model; known
	// secret values are masked regardless, and stored sessions and output
	// are redacted in full either way.
	ModelSeesSecretShapes bool `toml:"model_sees_secret_shapes"`
	// ApprovalSigning is how decode approve, deny and answer sign their
	// decisions: "mac" (the default) or "ssh" (the user's SSH key, for
	// decisions made on another machine). Read from the user's config only.
	ApprovalSigning string `toml:"approval_signing"`
	// Providers holds per-provider settings, keyed by provider name.
	Providers map[string]ProviderConfig `toml:"providers"`
	// MaxStdin caps piped input in bytes.
	MaxStdin int64 `toml:"max_stdin"`
	// IdleTimeout fails a model request that receives nothing for this
	// long ("2m" by default, "0" never), as a retryable provider error.
	IdleTimeout string `toml:"idle_timeout"`
	// Hooks are executables run at the agent loop's events; a repository's
	// hooks run only once the user trusts it (decode trust).
	Hooks HooksConfig `toml:"hooks"`
	// Models holds per-model settings, keyed by the model's name as -m
	// takes it: [models."ollama:qwen3"].
	Models map[string]ModelConfig `toml:"models"`
	// Compaction tunes when and how a long session's context is compacted.
	Compaction CompactionConfig `toml:"compaction"`
	// MCPServers are the MCP servers whose tools runs offer, by name; a
	// repository's (in its config or .mcp.json) only once it is trusted.
	MCPServers map[string]mcp.Server `toml:"mcp_servers"`
	// Sandbox configures the sandbox bash commands run in; only the
	// user's own config sets it.
	Sandbox SandboxConfig `toml:"sandbox"`
	// Snapshots, when false, turns code snapshots off (no decode diff or
	// rewind for the sessions that follow); DECODE_SNAPSHOTS=0 too.
	Snapshots *bool `toml:"snapshots"`
}

// ModelConfig describes a model the built-in table does not know (a local
// model), or overrides what it says. It is the one type for every
// per-model setting.
type ModelConfig struct {
	// ContextWindow is the model's context window in tokens.
	ContextWindow int `toml:"context_window"`
	// MaxOutput is the longest answer in tokens; 0 means an eighth of the
	// context window.
	MaxOutput int `toml:"max_output"`
	// InputPerMTok and OutputPerMTok are the model's price in USD per
	// million prompt and answer tokens, for cost and --max-cost.
	InputPerMTok  float64 `toml:"input_per_mtok"`
	OutputPerMTok float64 `toml:"output_per_mtok"`
}

// CompactionConfig is the [compaction] table.
type CompactionConfig struct {
	// Threshold is the share of the usable window (the context window less
	// the output limit) past which a request first compacts; 0 means 0.85.
	Threshold float64 `toml:"threshold"`
	// KeepTokens caps the recent entries kept verbatim; 0 means the smaller
	// of 20,000 tokens and a quarter of the window.
	KeepTokens int `toml:"keep_tokens"`
	// Disabled turns automatic compaction off (decode compact still works).
	Disabled bool `toml:"disabled"`
}

// ProviderConfig overrides a provider's endpoint or key source.
type ProviderConfig struct {
	BaseURL string `toml:"base_url"`
	// APIKeyEnv names the variable holding the key, instead of the default.
	APIKeyEnv string `toml:"api_key_env"`
	// APIKeyCmd is a command that prints the key (`pass show openai`), run
	// once per process when no variable holds one; from the user's config
	// only.
	APIKeyCmd string `toml:"api_key_cmd"`
}

const defaultMaxStdin = 1 << 20

// readConfig merges the config files and environment (Factory.Config's
// default). A repository's own config is not trusted: it may choose the
// model and add deny rules, but what would widen permissions or redirect
// API keys (allow rules, modes, base URLs) is ignored with a warning.
func (f *Factory) readConfig(repoRoot string) (Config, []string, error) {
	c := Config{MaxStdin: defaultMaxStdin}
	var warnings []string
	user := filepath.Join(f.configDir(), "config.toml")
	if err := mergeFile(&c, user); err != nil {
		return c, nil, err
	}
	if c.Model != "" {
		c.modelFrom = user
	}
	setSource(c.MCPServers, mcp.SourceUser)
	warnings = append(warnings, c.unknown...)
	if repoRoot != "" {
		var r Config
		path := filepath.Join(repoRoot, ".decode", "config.toml")
		err := mergeConfined(&r, path, repoRoot, f.configDir())
		warnings = append(warnings, r.unknown...)
		c.files = append(c.files, r.files...)
		switch {
		case secrets.IsOutside(err):
			warnings = append(warnings, fmt.Sprintf("%v; the repository's config is ignored", err))
			c.files = append(c.files, path+" (ignored: it resolves outside the repository)")
			r = Config{}
		case err != nil:
			return c, nil, err
		}
		if r.Model != "" {
			c.Model, c.modelFrom = r.Model, path
		}
		if r.MaxTurns != 0 {
			c.MaxTurns = r.MaxTurns
		}
		c.Deny = append(c.Deny, r.Deny...)
		for name, m := range r.Models {
			if c.Models == nil {
				c.Models = map[string]ModelConfig{}
			}
			c.Models[name] = m
		}
		if r.Compaction != (CompactionConfig{}) {
			c.Compaction = r.Compaction
		}
		c.SecretEnv = append(c.SecretEnv, r.SecretEnv...)
		if r.Snapshots != nil {
			c.Snapshots = r.Snapshots
		}
		setSource(r.MCPServers, mcp.SourceProject)
		trusted := f.trusts(repoRoot, path)
		switch {
		case !r.widens():
		case trusted:
			mergeTrusted(&c, r)
		default:
			why := ""
			if r := f.trustRevoked(repoRoot, path); r != "" {
				why = " (" + r + ")"
			}
			warnings = append(warnings, path+": hooks, allow, mode, providers and MCP servers from a repository's config are ignored until you trust it with decode trust (or put them in "+user+")"+why)
		}
		w, err := f.mergeMCPJSON(&c, repoRoot, trusted)
		if err != nil {
			return c, nil, err
		}
		warnings = append(warnings, w...)
		c.files = append(c.files, mcpJSONState(repoRoot, trusted))
	}
	if v := f.Getenv("DECODE_MODEL"); v != "" {
		c.Model, c.modelFrom = v, "DECODE_MODEL"
	}
	if v := f.Getenv("DECODE_MODE"); v != "" {
		c.Mode = v
	}
	if v := f.Getenv("DECODE_MAX_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, nil, fmt.Errorf("DECODE_MAX_TURNS=%q is not a number", v)
		}
		c.MaxTurns = n
	}
	if v := f.Getenv("DECODE_SNAPSHOTS"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return c, nil, fmt.Errorf("DECODE_SNAPSHOTS=%q is not true or false (1 or 0)", v)
		}
		c.Snapshots = &on
	}
	if v := f.Getenv("DECODE_IDLE_TIMEOUT"); v != "" {
		c.IdleTimeout = v
	}
	if err := checkModels(c); err != nil {
		return c, nil, err
	}
	return c, warnings, nil
}

func mergeFile(c *Config, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.files = append(c.files, path+" (not found)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return decodeConfig(c, path, data)
}

// mergeConfined is mergeFile for a repository's config: one that resolves
// outside the repository (a committed symlink to a file elsewhere) is
// refused, since its contents would be echoed in errors and trust output.
func mergeConfined(c *Config, path, root string, also ...string) error {
	data, err := secrets.ReadFile(path, root, also...)
	if errors.Is(err, fs.ErrNotExist) {
		c.files = append(c.files, path+" (not found)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return decodeConfig(c, path, data)
}

func decodeConfig(c *Config, path string, data []byte) error {
	c.files = append(c.files, path+" (read)")
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	for _, k := range md.Undecoded() {
		c.unknown = append(c.unknown, fmt.Sprintf("%s: unknown key %q is ignored (the README's Configuration section lists the keys)", path, k.String()))
	}
	return nil
}

// mcpJSONState says, for -v, whether the repository has a .mcp.json and
// whether its servers may start.
func mcpJSONState(root string, trusted bool) string {
	path := filepath.Join(root, ".mcp.json")
	switch _, err := os.Lstat(path); {
	case err != nil:
		return path + " (not found)"
	case !trusted:
		return path + " (found; its servers wait for decode trust)"
	}
	return path + " (read)"
}
