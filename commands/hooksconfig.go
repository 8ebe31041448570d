package commands

import (
	"fmt"
	"path/filepath"
	"time"

	"decode/agent"
	"decode/tools/mcp"
)

// HooksConfig is the [hooks] table: for each event of the agent loop, the
// command lines to run (a string or a list of strings), and how long one
// may take.
type HooksConfig struct {
	RunStart      hookCommands `toml:"run_start"`
	BeforeRequest hookCommands `toml:"before_request"`
	BeforeTool    hookCommands `toml:"before_tool"`
	AfterTool     hookCommands `toml:"after_tool"`
	BeforeFinish  hookCommands `toml:"before_finish"`
	RunEnd        hookCommands `toml:"run_end"`
	// Timeout is a duration such as "30s"; the default is a minute.
	Timeout string `toml:"timeout"`
}

// hookCommands is one or more command lines.
type hookCommands []string

// UnmarshalTOML accepts a string or a list of strings.
func (h *hookCommands) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*h = hookCommands{v}
		return nil
	case []any:
		out := make(hookCommands, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("a hook is a command line (a string), not %T", e)
			}
			out = append(out, s)
		}
		*h = out
		return nil
	}
	return fmt.Errorf("a hook is a command line or a list of them, not %T", v)
}

// commands maps each event to its command lines.
func (h HooksConfig) commands() map[string][]string {
	m := map[string][]string{}
	for ev, cmds := range map[string]hookCommands{
		agent.HookRunStart: h.RunStart, agent.HookBeforeRequest: h.BeforeRequest,
		agent.HookBeforeTool: h.BeforeTool, agent.HookAfterTool: h.AfterTool,
		agent.HookBeforeFinish: h.BeforeFinish, agent.HookRunEnd: h.RunEnd,
	} {
		if len(cmds) > 0 {
			m[ev] = cmds
		}
	}
	return m
}

// add appends o's commands after h's; o's timeout wins when set.
func (h *HooksConfig) add(o HooksConfig) {
	h.RunStart = append(h.RunStart, o.RunStart...)
	h.BeforeRequest = append(h.BeforeRequest, o.BeforeRequest...)
	h.BeforeTool = append(h.BeforeTool, o.BeforeTool...)
	h.AfterTool = append(h.AfterTool, o.AfterTool...)
	h.BeforeFinish = append(h.BeforeFinish, o.BeforeFinish...)
	h.RunEnd = append(h.RunEnd, o.RunEnd...)
	if o.Timeout != "" {
		h.Timeout = o.Timeout
	}
}

// timeout parses Timeout; zero means the default.
func (h HooksConfig) timeout() (time.Duration, error) {
	if h.Timeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(h.Timeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("config: hooks timeout %q is not a positive duration such as \"30s\"", h.Timeout)
	}
	return d, nil
}

// widens reports whether a repository config sets anything that runs code
// or widens permissions, and so needs the user's trust.
func (c Config) widens() bool {
	return len(c.Allow) > 0 || c.Mode != "" || len(c.Providers) > 0 || len(c.Hooks.commands()) > 0 || len(c.MCPServers) > 0
}

// mergeTrusted adds what a trusted repository config widens.
func mergeTrusted(c *Config, r Config) {
	c.Allow = append(c.Allow, r.Allow...)
	if r.Mode != "" {
		c.Mode = r.Mode
	}
	for name, p := range r.Providers {
		if c.Providers == nil {
			c.Providers = map[string]ProviderConfig{}
		}
		p.APIKeyCmd = "" // a command that prints your key is yours to configure, never a repository's
		c.Providers[name] = p
	}
	c.Hooks.add(r.Hooks)
	for name, s := range r.MCPServers {
		if _, mine := c.MCPServers[name]; mine {
			continue // the user's own server of that name wins
		}
		if c.MCPServers == nil {
			c.MCPServers = map[string]mcp.Server{}
		}
		c.MCPServers[name] = s
	}
}

// trusts reports whether the user trusted the repository at root with its
// config file (and .mcp.json) as they are now.
func (f *Factory) trusts(root, path string) bool {
	data, ok := trustedFiles(root, path, f.configDir())
	if !ok {
		return false
	}
	return trustStore{path: filepath.Join(f.configDir(), "trusted")}.trusted(root, data)
}

// trustedFiles returns what the trust hash covers (see trustState): the
// repository's config, its .mcp.json, and every file inside the repository
// that a hook or MCP server of theirs names. ok is false when there is
// neither a config nor a .mcp.json.
func trustedFiles(root, path, configDir string) ([]byte, bool) {
	data, _, ok := trustState(root, path, configDir)
	return data, ok
}
