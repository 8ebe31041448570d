// Package mcp connects decode to Model Context Protocol servers and offers
// their tools to the model as ordinary decode tools: gated, bounded in time
// and output, and named mcp__server__tool.
package mcp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Where a server's configuration came from. Only the user's own config may
// mark a server read-only; a project's servers are used only once the user
// trusts the repository.
const (
	SourceUser    = "user"                // the user's config.toml
	SourceProject = ".decode/config.toml" // the repository's config
	SourceMCPJSON = ".mcp.json"           // the repository's .mcp.json
)

// Defaults for a server's timeouts.
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// Server is one configured MCP server: a command spoken to over stdio, or
// a streamable HTTP endpoint.
type Server struct {
	Name string `toml:"-" json:"-"`
	// stdio
	Command string            `toml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `toml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `toml:"env,omitempty" json:"env,omitempty"`
	Cwd     string            `toml:"cwd,omitempty" json:"cwd,omitempty"`
	// streamable HTTP
	URL            string            `toml:"url,omitempty" json:"url,omitempty"`
	Headers        map[string]string `toml:"headers,omitempty" json:"headers,omitempty"`
	BearerTokenEnv string            `toml:"bearer_token_env,omitempty" json:"bearer_token_env,omitempty"`

	Enabled        *bool    `toml:"enabled,omitempty" json:"enabled,omitempty"`
	StartupTimeout Duration `toml:"startup_timeout,omitempty" json:"startup_timeout,omitempty"`
	ToolTimeout    Duration `toml:"tool_timeout,omitempty" json:"tool_timeout,omitempty"`
	EnabledTools   []string `toml:"enabled_tools,omitempty" json:"enabled_tools,omitempty"`
	DisabledTools  []string `toml:"disabled_tools,omitempty" json:"disabled_tools,omitempty"`
	// ReadOnly says every tool of the server changes nothing, so default
	// and plan mode run them without asking. Honoured only from the user's
	// own config.
	ReadOnly bool `toml:"read_only,omitempty" json:"read_only,omitempty"`

	// Source is where the configuration came from (SourceUser, ...).
	Source string `toml:"-" json:"-"`
}

// IsEnabled reports whether the server is to be started.
func (s Server) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// Transport names the server's transport: "stdio" or "http".
func (s Server) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// TrustedReadOnly reports whether the server's tools count as read-only:
// only the user's own config can say so.
func (s Server) TrustedReadOnly() bool { return s.ReadOnly && s.Source == SourceUser }

// Check reports a configuration the server cannot start with.
func (s Server) Check() error {
	switch {
	case !validServerName(s.Name):
		return fmt.Errorf("MCP server name %q: use letters, digits, _ and - only", s.Name)
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("MCP server %s: set command (a stdio server) or url (a streamable HTTP server)", s.Name)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("MCP server %s: set command or url, not both", s.Name)
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return fmt.Errorf("MCP server %s: url %q is not an http(s) URL", s.Name, s.URL)
	}
	return nil
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,48}$`)

func validServerName(s string) bool { return serverNameRE.MatchString(s) }

// ValidServerName reports whether s may name a server.
func ValidServerName(s string) bool { return validServerName(s) }

func (s Server) startupTimeout() time.Duration {
	if s.StartupTimeout > 0 {
		return time.Duration(s.StartupTimeout)
	}
	return DefaultStartupTimeout
}

func (s Server) toolTimeout() time.Duration {
	if s.ToolTimeout > 0 {
		return time.Duration(s.ToolTimeout)
	}
	return DefaultToolTimeout
}

// wantsTool applies enabled_tools and disabled_tools to a tool's name on
// the server.
func (s Server) wantsTool(name string) bool {
	if len(s.EnabledTools) > 0 && !contains(s.EnabledTools, name) {
		return false
	}
	return !contains(s.DisabledTools, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Duration is a timeout in config: a Go duration string ("30s", "2m") or
// a number of seconds.
type Duration time.Duration

// UnmarshalTOML reads a duration string or a number of seconds.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		p, err := time.ParseDuration(x)
		if err != nil || p <= 0 {
			return fmt.Errorf("%q is not a duration like \"30s\" or a number of seconds", x)
		}
		*d = Duration(p)
	case int64:
		*d = Duration(time.Duration(x) * time.Second)
	case float64:
		*d = Duration(x * float64(time.Second))
	default:
		return fmt.Errorf("%v is not a duration like \"30s\" or a number of seconds", v)
	}
	if *d <= 0 {
		return fmt.Errorf("a timeout must be positive")
	}
	return nil
}

// UnmarshalJSON reads the same forms from JSON.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if f, ok := v.(float64); ok {
		return d.UnmarshalTOML(f)
	}
	return d.UnmarshalTOML(v)
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// String formats the duration.
func (d Duration) String() string { return time.Duration(d).String() }

// mcpJSON is the .mcp.json format that Claude Code and other agents read.
type mcpJSON struct {
	Servers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		Cwd     string            `json:"cwd"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"mcpServers"`
}

// ParseMCPJSON reads a project's .mcp.json. ${VAR} and ${VAR:-default} in
// commands, arguments, environment values, URLs and headers are expanded
// with getenv, as Claude Code does.
func ParseMCPJSON(data []byte, getenv func(string) string) ([]Server, error) {
	var f mcpJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	ex := func(s string) string { return expand(s, getenv) }
	var out []Server
	for name, c := range f.Servers {
		switch c.Type {
		case "", "stdio", "http", "streamable-http", "streamableHttp":
		case "sse":
			return nil, fmt.Errorf("server %s: the legacy SSE transport is not supported; use a streamable HTTP url", name)
		default:
			return nil, fmt.Errorf("server %s: unknown type %q (want stdio or http)", name, c.Type)
		}
		s := Server{Name: name, Command: ex(c.Command), Cwd: ex(c.Cwd), URL: ex(c.URL), Source: SourceMCPJSON}
		for _, a := range c.Args {
			s.Args = append(s.Args, ex(a))
		}
		s.Env = expandMap(c.Env, ex)
		s.Headers = expandMap(c.Headers, ex)
		if err := s.Check(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func expandMap(m map[string]string, ex func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = ex(v)
	}
	return out
}

// expand replaces ${VAR} and ${VAR:-default}; anything else, a lone $
// included, stays as it is.
func expand(s string, getenv func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		name, def, hasDef := strings.Cut(s[i+2:i+j], ":-")
		val := getenv(name)
		if val == "" && hasDef {
			val = def
		}
		b.WriteString(val)
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}
