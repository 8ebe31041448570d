package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"decode/agent/llm"
	"decode/tools"
)

// Options configure a Manager.
type Options struct {
	// Version is decode's version, sent to servers as the client's.
	Version string
	// Env is the environment stdio servers start with, secrets already
	// removed; a server's own env entries are added to it.
	Env []string
	// Getenv reads decode's environment, for bearer_token_env.
	Getenv func(string) string
	// Dir is the working directory of stdio servers without a cwd, and
	// the base of a relative cwd.
	Dir string
	// TempDir holds full outputs too long to show.
	TempDir string
	// Wrap, when set, adapts a stdio server's command before it starts:
	// the seam where the command sandbox confines it.
	Wrap func(*exec.Cmd) error
}

// Manager owns the connections to a run's MCP servers: it starts them in
// parallel, offers their tools, and stops them.
type Manager struct {
	opts    Options
	servers []*Conn
	once    sync.Once
}

// State is where a server stands.
type State string

// Server states.
const (
	StateIdle     State = "not started"
	StateReady    State = "ready"
	StateFailed   State = "failed"
	StateDisabled State = "disabled"
)

// Conn is one server and its connection.
type Conn struct {
	Server  Server
	State   State
	Err     error         // why it failed
	Elapsed time.Duration // how long starting took
	Tools   []*Tool
	session *sdk.ClientSession
	stdio   *stdioTransport
	opts    *Options
}

// NewManager returns a manager of servers; nothing starts yet.
func NewManager(servers []Server, o Options) *Manager {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	m := &Manager{opts: o}
	for _, s := range servers {
		c := &Conn{Server: s, State: StateIdle, opts: &m.opts}
		if !s.IsEnabled() {
			c.State = StateDisabled
		}
		m.servers = append(m.servers, c)
	}
	return m
}

// SetWrap sets Options.Wrap before the servers start.
func (m *Manager) SetWrap(wrap func(*exec.Cmd) error) { m.opts.Wrap = wrap }

// Sandboxed reports whether stdio servers start wrapped (in the sandbox).
func (m *Manager) Sandboxed() bool { return m.opts.Wrap != nil }

// Servers returns the servers in configuration order.
func (m *Manager) Servers() []*Conn { return m.servers }

// StartError says which server failed to start and why.
type StartError struct {
	Server string
	Err    error
}

func (e *StartError) Error() string { return fmt.Sprintf("MCP server %s: %v", e.Server, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// Start starts every enabled server in parallel, each within its startup
// timeout, and lists its tools. It returns the failures; the servers that
// started are usable either way. Start runs once; later calls return nil.
func (m *Manager) Start(ctx context.Context) []error {
	var errs []error
	m.once.Do(func() {
		var wg sync.WaitGroup
		for _, c := range m.servers {
			if c.State != StateIdle {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.start(ctx)
			}()
		}
		wg.Wait()
		m.dedupe()
		for _, c := range m.servers {
			if c.State == StateFailed {
				errs = append(errs, &StartError{Server: c.Server.Name, Err: c.Err})
			}
		}
	})
	return errs
}

// dedupe renames tools whose decode names collide (two servers whose
// names sanitise alike) with a hash of their origin.
func (m *Manager) dedupe() {
	seen := map[string]bool{}
	for _, c := range m.servers {
		for _, t := range c.Tools {
			if seen[t.spec.Name] {
				sum := sha256.Sum256([]byte(c.Server.Name + "\x00" + t.remote + "\x00dup"))
				suffix := "_" + hex.EncodeToString(sum[:4])
				name := t.spec.Name
				if len(name)+len(suffix) > maxNameLen {
					name = name[:maxNameLen-len(suffix)]
				}
				t.spec.Name = name + suffix
			}
			seen[t.spec.Name] = true
		}
	}
}

// Tools returns the tools of the servers that started, server by server.
func (m *Manager) Tools() []tools.Tool {
	var out []tools.Tool
	for _, c := range m.servers {
		for _, t := range c.Tools {
			out = append(out, t)
		}
	}
	return out
}

// Close stops every server, in parallel.
func (m *Manager) Close() error {
	var wg sync.WaitGroup
	for _, c := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close()
		}()
	}
	wg.Wait()
	return nil
}

// start connects to the server and lists its tools within the startup
// timeout.
func (c *Conn) start(ctx context.Context) {
	begin := time.Now()
	defer func() { c.Elapsed = time.Since(begin) }()
	timeout := c.Server.startupTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.connect(ctx)
	if err == nil {
		err = c.listTools(ctx)
	}
	if err != nil {
		c.close()
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("did not start within %s (raise startup_timeout in its config if it is slow, or check that it runs: %s)", timeout, c.describe())
		}
		if c.stdio != nil {
			if tail := c.stdio.stderr.String(); tail != "" {
				err = fmt.Errorf("%w; its stderr ends: %s", err, lastLine(tail))
			}
		}
		c.State, c.Err = StateFailed, err
		return
	}
	c.State = StateReady
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := lines[len(lines)-1]
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}

// describe names what the server runs or where it is.
func (c *Conn) describe() string {
	if c.Server.URL != "" {
		return c.Server.URL
	}
	return strings.TrimSpace(c.Server.Command + " " + strings.Join(c.Server.Args, " "))
}

func (c *Conn) connect(ctx context.Context) error {
	s := c.Server
	if err := s.Check(); err != nil {
		return err
	}
	var transport sdk.Transport
	if s.URL != "" {
		headers := map[string]string{}
		for k, v := range s.Headers {
			headers[k] = v
		}
		if s.BearerTokenEnv != "" {
			tok := c.opts.Getenv(s.BearerTokenEnv)
			if tok == "" {
				return fmt.Errorf("bearer_token_env names %s, which is not set", s.BearerTokenEnv)
			}
			headers["Authorization"] = "Bearer " + tok
		}
		transport = &sdk.StreamableClientTransport{
			Endpoint:     s.URL,
			HTTPClient:   &http.Client{Transport: &httpTransport{base: http.DefaultTransport, headers: headers}},
			MaxRetries:   1,
			MaxEventSize: maxMessage,
		}
	} else {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = c.opts.Dir
		if s.Cwd != "" {
			cmd.Dir = s.Cwd
			if !filepath.IsAbs(s.Cwd) && c.opts.Dir != "" {
				cmd.Dir = filepath.Join(c.opts.Dir, s.Cwd)
			}
		}
		cmd.Env = append([]string{}, c.opts.Env...)
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
		if p, err := exec.LookPath(s.Command); err == nil && !filepath.IsAbs(s.Command) {
			if abs, err := filepath.Abs(p); err == nil {
				cmd.Path = abs
			}
		}
		if c.opts.Wrap != nil {
			if err := c.opts.Wrap(cmd); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
		}
		c.stdio = newStdioTransport(cmd) // after Wrap: its own process group around the sandbox
		transport = c.stdio
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "decode", Version: c.opts.Version}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	c.session = session
	return nil
}

// listTools reads every page of the server's tools.
func (c *Conn) listTools(ctx context.Context) error {
	params := &sdk.ListToolsParams{}
	for page := 0; page < 100; page++ {
		res, err := c.session.ListTools(ctx, params)
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		for _, t := range res.Tools {
			if t == nil || !c.Server.wantsTool(t.Name) {
				continue
			}
			c.Tools = append(c.Tools, newTool(c, t))
		}
		if res.NextCursor == "" {
			return nil
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil
}

func (c *Conn) close() {
	if c.session != nil {
		done := make(chan struct{})
		go func() {
			c.session.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * stopGrace):
		}
	}
	if c.stdio != nil {
		c.stdio.stop()
	}
}

// SchemaBytes is the size of the tool definitions the server adds to
// every request.
func (c *Conn) SchemaBytes() int {
	n := 0
	for _, t := range c.Tools {
		n += t.SpecBytes()
	}
	return n
}

// ToolHash is the hash recorded for a tool: its name, description and
// input schema as the server sent them.
func ToolHash(spec llm.ToolSpec) string {
	h := sha256.New()
	json.NewEncoder(h).Encode(spec)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
