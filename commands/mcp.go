package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/secrets"
	"decode/session"
	"decode/tools"
	"decode/tools/mcp"
	"decode/tools/sandbox"
)

// MCPOptions are the inputs of decode mcp's subcommands.
type MCPOptions struct {
	F    *Factory
	Dir  string
	Name string
	// add
	Server mcp.Server
}

// NewCmdMCP builds `decode mcp` and its subcommands.
func NewCmdMCP(f *Factory, runF func(*cli.Context, string, *MCPOptions) error) *cli.Command {
	if runF == nil {
		runF = mcpRun
	}
	dirFlag := &cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"}
	act := func(sub string, nargs int) cli.ActionFunc {
		return func(c *cli.Context) error {
			if c.NArg() != nargs {
				return usageErrorf("decode mcp %s takes %s", sub, map[int]string{0: "no arguments", 1: "one server NAME"}[nargs])
			}
			return runF(c, sub, &MCPOptions{F: f, Dir: c.String("dir"), Name: c.Args().First()})
		}
	}
	return &cli.Command{
		Name:  "mcp",
		Usage: "configure MCP servers whose tools runs offer (mcp__server__tool)",
		Description: `MCP servers come from [mcp_servers.NAME] in your config.toml and, once you
trust the repository (decode trust), from its .mcp.json and .decode/config.toml.
Their tools ask for approval unless a rule allows them:
   decode run "triage the open issues" --allow 'mcp__github__list_*'
See docs/mcp.md.`,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("decode mcp has no subcommand %q; use add, remove, list or tools", c.Args().First())
			}
			return cli.ShowSubcommandHelp(c)
		},
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a server to your config.toml",
				ArgsUsage: "NAME -- COMMAND [ARGS...]  |  NAME --url URL",
				Description: `   decode mcp add github --env GITHUB_TOKEN=... -- npx -y @modelcontextprotocol/server-github
   decode mcp add docs --url https://example.com/mcp --bearer-token-env DOCS_TOKEN`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "url", Usage: "a streamable HTTP server at `URL` instead of a command"},
					&cli.StringSliceFlag{Name: "env", Usage: "set `KEY=VALUE` in the server's environment"},
					&cli.StringSliceFlag{Name: "header", Usage: "send `KEY=VALUE` as an HTTP header"},
					&cli.StringFlag{Name: "bearer-token-env", Usage: "send the value of `VAR` as a bearer token"},
					&cli.StringFlag{Name: "cwd", Usage: "run the server in `DIR`"},
					&cli.DurationFlag{Name: "startup-timeout", Usage: "give the server `DURATION` to start (default 10s)"},
					&cli.DurationFlag{Name: "tool-timeout", Usage: "give each call `DURATION` (default 60s)"},
					&cli.BoolFlag{Name: "read-only", Usage: "the server's tools change nothing: run them without asking, in plan mode too"},
				},
				OnUsageError: onUsageError,
				Action: func(c *cli.Context) error {
					if c.NArg() < 1 {
						return usageErrorf("decode mcp add needs a NAME, then -- COMMAND ARGS or --url URL")
					}
					s := mcp.Server{Name: c.Args().First(), URL: c.String("url"), Cwd: c.String("cwd"),
						BearerTokenEnv: c.String("bearer-token-env"), ReadOnly: c.Bool("read-only"),
						StartupTimeout: mcp.Duration(c.Duration("startup-timeout")), ToolTimeout: mcp.Duration(c.Duration("tool-timeout"))}
					if rest := c.Args().Tail(); len(rest) > 0 {
						s.Command, s.Args = rest[0], rest[1:]
					}
					var err error
					if s.Env, err = keyValues("--env", c.StringSlice("env")); err != nil {
						return err
					}
					if s.Headers, err = keyValues("--header", c.StringSlice("header")); err != nil {
						return err
					}
					if err := s.Check(); err != nil {
						return &UsageError{Msg: err.Error()}
					}
					return runF(c, "add", &MCPOptions{F: f, Name: s.Name, Server: s})
				},
			},
			{Name: "remove", Usage: "remove a server from your config.toml", ArgsUsage: "NAME", Action: act("remove", 1), OnUsageError: onUsageError},
			{Name: "list", Usage: "start the servers and list them: source, state, tool count, schema bytes", Flags: []cli.Flag{dirFlag}, Action: act("list", 0), OnUsageError: onUsageError},
			{Name: "tools", Usage: "start a server and list its tools with their gate class", ArgsUsage: "NAME", Flags: []cli.Flag{dirFlag}, Action: act("tools", 1), OnUsageError: onUsageError},
		},
	}
}

func keyValues(flag string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("%s %q: want KEY=VALUE", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

func mcpRun(c *cli.Context, sub string, o *MCPOptions) error {
	switch sub {
	case "add":
		return mcpAdd(o)
	case "remove":
		return mcpRemove(o)
	case "list":
		return mcpList(c.Context, o)
	case "tools":
		return mcpTools(c.Context, o)
	}
	return usageErrorf("unknown subcommand mcp %s", sub)
}

func (f *Factory) userConfigPath() string { return filepath.Join(f.configDir(), "config.toml") }

// mcpAdd appends a [mcp_servers.NAME] table to the user's config.toml,
// leaving the rest of the file as the user wrote it.
func mcpAdd(o *MCPOptions) error {
	path := o.F.userConfigPath()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read config: %w", err)
	}
	var c Config
	if err := decodeConfig(&c, path, data); err != nil {
		return err
	}
	if _, dup := c.MCPServers[o.Name]; dup {
		return fmt.Errorf("MCP server %s is already in %s; remove it first with decode mcp remove %s", o.Name, path, o.Name)
	}
	var table bytes.Buffer
	enc := toml.NewEncoder(&table)
	enc.Indent = ""
	if err := enc.Encode(map[string]map[string]map[string]any{"mcp_servers": {o.Name: serverTable(o.Server)}}); err != nil {
		return err
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	if len(data) > 0 {
		data = append(data, '\n')
	}
	// The encoder opens with a bare [mcp_servers] table, which a second
	// server would define again.
	data = append(data, bytes.TrimLeft(bytes.TrimPrefix(table.Bytes(), []byte("[mcp_servers]\n")), "\n")...)
	var check Config
	if err := decodeConfig(&check, path, data); err != nil {
		return fmt.Errorf("adding the server would break %s (%v); add it by hand", path, err)
	}
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(o.F.IO.Err, "added MCP server %s to %s; its tools are mcp__%s__*; check it with decode mcp tools %s\n", o.Name, path, o.Name, o.Name)
	return nil
}

// serverTable is the config table of s, with only what is set.
func serverTable(s mcp.Server) map[string]any {
	t := map[string]any{}
	set := func(k string, v any, ok bool) {
		if ok {
			t[k] = v
		}
	}
	set("command", s.Command, s.Command != "")
	set("args", s.Args, len(s.Args) > 0)
	set("env", s.Env, len(s.Env) > 0)
	set("cwd", s.Cwd, s.Cwd != "")
	set("url", s.URL, s.URL != "")
	set("headers", s.Headers, len(s.Headers) > 0)
	set("bearer_token_env", s.BearerTokenEnv, s.BearerTokenEnv != "")
	set("startup_timeout", s.StartupTimeout.String(), s.StartupTimeout > 0)
	set("tool_timeout", s.ToolTimeout.String(), s.ToolTimeout > 0)
	set("read_only", true, s.ReadOnly)
	return t
}

// mcpRemove deletes the server's tables ([mcp_servers.NAME] and its
// sub-tables) from the user's config.toml.
func mcpRemove(o *MCPOptions) error {
	path := o.F.userConfigPath()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read config: %w", err)
	}
	var c Config
	if err := decodeConfig(&c, path, data); err != nil {
		return err
	}
	if _, ok := c.MCPServers[o.Name]; !ok {
		return fmt.Errorf("there is no MCP server %s in %s (decode mcp list shows the servers)", o.Name, path)
	}
	var out []string
	skipping := false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if h := strings.TrimSpace(line); strings.HasPrefix(h, "[") {
			skipping = isServerTable(h, o.Name)
		}
		if !skipping {
			out = append(out, line)
		}
	}
	next := []byte(strings.TrimRight(strings.Join(out, ""), "\n") + "\n")
	var check Config
	if err := decodeConfig(&check, path, next); err != nil {
		return fmt.Errorf("cannot remove %s from %s automatically (%v); edit the file by hand", o.Name, path, err)
	}
	if _, still := check.MCPServers[o.Name]; still {
		return fmt.Errorf("cannot remove %s from %s automatically (it is not written as a [mcp_servers.%s] table); edit the file by hand", o.Name, path, o.Name)
	}
	if err := writeFileAtomic(path, next, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(o.F.IO.Err, "removed MCP server %s from %s\n", o.Name, path)
	return nil
}

// isServerTable reports whether a TOML table header is [mcp_servers.NAME]
// or one of its sub-tables.
func isServerTable(header, name string) bool {
	h := strings.Trim(strings.TrimSpace(strings.SplitN(header, "#", 2)[0]), "[] ")
	for _, form := range []string{"mcp_servers." + name, `mcp_servers."` + name + `"`, "mcp_servers.'" + name + "'"} {
		if h == form || strings.HasPrefix(h, form+".") {
			return true
		}
	}
	return false
}

// mcpConfig loads the config for dir and the servers it enables.
func (f *Factory) mcpConfig(dirFlag string) (Config, []mcp.Server, string, []string, error) {
	dir, err := f.workDir(dirFlag)
	if err != nil {
		return Config{}, nil, "", nil, err
	}
	cfg, warnings, err := f.loadConfig(repoRoot(dir))
	if err != nil {
		return cfg, nil, "", nil, err
	}
	return cfg, sortedServers(cfg.MCPServers), dir, warnings, nil
}

func mcpList(ctx context.Context, o *MCPOptions) error {
	cfg, servers, dir, warnings, err := o.F.mcpConfig(o.Dir)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.F.IO.Err, "decode: warning: "+w)
	}
	untrusted := o.F.untrustedServers(repoRoot(dir))
	if len(servers) == 0 && len(untrusted) == 0 {
		fmt.Fprintf(o.F.IO.Err, "no MCP servers configured; add one with decode mcp add NAME -- COMMAND ARGS\n")
		return nil
	}
	m := o.F.newMCPManager(cfg, servers, dir)
	defer m.Close()
	m.Start(ctx)
	tw := tabwriter.NewWriter(o.F.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSTATE\tTOOLS\tSCHEMA\tTARGET")
	for _, c := range m.Servers() {
		state := string(c.State)
		if c.State == mcp.StateReady {
			state += fmt.Sprintf(" (%dms)", c.Elapsed.Milliseconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", c.Server.Name, c.Server.Source, state, len(c.Tools), byteSize(c.SchemaBytes()), serverTarget(c.Server))
	}
	for _, s := range untrusted {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", s.Name, s.Source, "untrusted (decode trust)", serverTarget(s))
	}
	tw.Flush()
	for _, c := range m.Servers() {
		if c.Err != nil {
			fmt.Fprintf(o.F.IO.Err, "decode: MCP server %s: %v\n", c.Server.Name, c.Err)
		}
	}
	return nil
}

func mcpTools(ctx context.Context, o *MCPOptions) error {
	cfg, servers, dir, warnings, err := o.F.mcpConfig(o.Dir)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.F.IO.Err, "decode: warning: "+w)
	}
	var pick []mcp.Server
	for _, s := range servers {
		if s.Name == o.Name {
			pick = append(pick, s)
		}
	}
	if len(pick) == 0 {
		return fmt.Errorf("there is no MCP server %s (decode mcp list shows the servers)", o.Name)
	}
	pick[0].Enabled = nil // listing a disabled server's tools is what one does before enabling it
	m := o.F.newMCPManager(cfg, pick, dir)
	defer m.Close()
	if errs := m.Start(ctx); len(errs) > 0 {
		return errs[0]
	}
	gate, err := tools.NewGate(tools.GateConfig{Mode: tools.ModeDefault, Root: dir, Allow: cfg.Allow, Deny: cfg.Deny})
	if err != nil {
		return err
	}
	for _, t := range m.Tools() {
		mt := t.(*mcp.Tool)
		v := gate.Check(mt.Spec().Name, mt.ReadOnly(), []byte(`{}`))
		class := string(v.Decision)
		switch {
		case v.Rule != "":
			class += " (rule " + v.Rule + ")"
		case mt.ReadOnly():
			class += " (read_only server)"
		}
		if mt.ServerSaysReadOnly() && !mt.ReadOnly() {
			class += "; server says read-only"
		}
		fmt.Fprintf(o.F.IO.Out, "%s  [%s]  %d bytes\n    %s\n", mt.Spec().Name, class, mt.SpecBytes(), oneLine(strings.TrimPrefix(mt.Spec().Description, "(MCP server "+o.Name+") ")))
	}
	return nil
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func byteSize(n int) string {
	if n < 1024 {
		return strconv.Itoa(n) + " B"
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}

// serverTarget is what a server runs or where it is, without secrets: env
// values and headers are left out.
func serverTarget(s mcp.Server) string {
	if s.URL != "" {
		return s.URL
	}
	return strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
}

// sortedServers returns the servers of a config table by name, each
// knowing its name.
func sortedServers(m map[string]mcp.Server) []mcp.Server {
	out := make([]mcp.Server, 0, len(m))
	for name, s := range m {
		s.Name = name
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// setSource marks where the servers of a config table came from.
func setSource(m map[string]mcp.Server, source string) {
	for name, s := range m {
		s.Name, s.Source = name, source
		m[name] = s
	}
}

// untrustedServers returns the servers a repository brings that are not
// used because the user has not trusted it (as it is now).
func (f *Factory) untrustedServers(root string) []mcp.Server {
	if root == "" {
		return nil
	}
	path := filepath.Join(root, ".decode", "config.toml")
	if f.trusts(root, path) {
		return nil
	}
	var c Config
	if data, err := os.ReadFile(path); err == nil && decodeConfig(&c, path, data) == nil {
		setSource(c.MCPServers, mcp.SourceProject)
	}
	out := sortedServers(c.MCPServers)
	servers, _ := readMCPJSON(root, f.Getenv)
	return append(out, servers...)
}

// readMCPJSON reads the repository's .mcp.json, if any.
func readMCPJSON(root string, getenv func(string) string) ([]mcp.Server, error) {
	path := filepath.Join(root, ".mcp.json")
	data, err := secrets.ReadFile(path, root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	servers, err := mcp.ParseMCPJSON(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return servers, nil
}

// mergeMCPJSON adds the servers of a trusted repository's .mcp.json; an
// untrusted one is reported and ignored.
func (f *Factory) mergeMCPJSON(c *Config, root string, trusted bool) ([]string, error) {
	servers, err := readMCPJSON(root, f.Getenv)
	if err != nil || len(servers) == 0 {
		return nil, err
	}
	if !trusted {
		return []string{fmt.Sprintf("%s: its %d MCP server(s) are not started until you trust the repository with decode trust", filepath.Join(root, ".mcp.json"), len(servers))}, nil
	}
	for _, s := range servers {
		if _, taken := c.MCPServers[s.Name]; taken {
			continue
		}
		if c.MCPServers == nil {
			c.MCPServers = map[string]mcp.Server{}
		}
		c.MCPServers[s.Name] = s
	}
	return nil, nil
}

// newMCPManager returns a manager of servers: stdio servers start in dir
// with decode's environment minus its secrets.
func (f *Factory) newMCPManager(cfg Config, servers []mcp.Server, dir string) *mcp.Manager {
	return mcp.NewManager(servers, mcp.Options{
		Version: f.Version,
		Env:     tools.ScrubEnv(f.Environ(), f.secretNames(cfg)),
		Getenv:  f.Getenv,
		Dir:     dir,
		TempDir: bashTempDir(),
	})
}

// mcpStart starts the run's MCP servers in the background; wait returns
// their tools once every server started or failed. With no servers it
// costs nothing.
func (f *Factory) mcpStart(ctx context.Context, o *AgentOptions, cfg Config, dir string) *mcpRunning {
	servers := sortedServers(cfg.MCPServers)
	if o.Command == "ask" || gateMode(o, cfg) == string(tools.ModePlan) {
		// Read-only runs offer only the tools of servers your config
		// marks read_only: the others are not even started.
		var ro []mcp.Server
		for _, s := range servers {
			if s.TrustedReadOnly() {
				ro = append(ro, s)
			}
		}
		servers = ro
	}
	if len(servers) == 0 {
		return nil
	}
	m := f.newMCPManager(cfg, servers, dir)
	if sb := o.sandbox.bash; sb != nil {
		m.SetWrap(mcpSandbox(sb))
	}
	r := &mcpRunning{m: m, done: make(chan struct{}), strict: o.MCPStrict}
	go func() {
		r.errs = r.m.Start(ctx)
		close(r.done)
	}()
	return r
}

// mcpSandbox returns what runs a stdio server inside the run's command
// sandbox: it reads the workspace, the system, the toolchains and its own
// installation, writes the workspace, the toolchain caches and a temp dir,
// never the protected paths, and keeps the network (servers are often
// clients of a remote service).
func mcpSandbox(sb *tools.BashSandbox) func(*exec.Cmd) error {
	return func(cmd *exec.Cmd) error {
		read := append(append([]string{}, sb.Read...), sb.Roots...)
		if dir := installDir(cmd.Path); dir != "" {
			read = append(read, dir)
		}
		write := append(append(append([]string{}, sb.Write...), sb.Roots...), sb.TempDir)
		h, err := sandbox.Command(context.Background(), sandbox.Spec{
			Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env, Layers: sb.Layers, Helper: sb.Helper,
			Read: read, Write: write, Protected: sb.Protected, Pinned: sb.Pinned, Net: true,
		})
		if err != nil {
			return err
		}
		cmd.Path, cmd.Args, cmd.Env, cmd.Dir, cmd.SysProcAttr, cmd.Err = h.Path, h.Args, h.Env, h.Dir, h.SysProcAttr, h.Err
		return nil
	}
}

// installDir is the directory a server's program lives in, symlinks
// resolved; for a package under node_modules, that node_modules directory
// (its dependencies are beside it).
func installDir(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return ""
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	if i := strings.LastIndex(real, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
		return real[:i+len("/node_modules")]
	}
	return filepath.Dir(real)
}

// mcpRunning is a run's MCP servers, starting.
type mcpRunning struct {
	m      *mcp.Manager
	done   chan struct{}
	errs   []error
	strict bool
}

// MCPStartError is a server that failed to start under --mcp-strict.
type MCPStartError struct{ Errs []error }

func (e *MCPStartError) Error() string {
	return fmt.Sprintf("%s; fix or disable the server (enabled = false), or run without --mcp-strict to go on without it", errors.Join(e.Errs...).Error())
}

// tools waits for the servers and returns their tools; a server that
// failed is a warning, or an error under --mcp-strict.
func (r *mcpRunning) tools(warn func(string)) ([]tools.Tool, error) {
	if r == nil {
		return nil, nil
	}
	<-r.done
	if len(r.errs) > 0 && r.strict {
		return nil, &MCPStartError{Errs: r.errs}
	}
	for _, err := range r.errs {
		warn(err.Error() + "; going on without it")
	}
	return r.m.Tools(), nil
}

func (r *mcpRunning) close() {
	if r != nil {
		<-r.done
		r.m.Close()
	}
}

// addMCPTools waits for the run's MCP servers and adds their tools to the
// registry (the read-only ones only, for ask and plan), warning about
// tools that changed or vanished since a resumed or replayed session
// recorded them.
func addMCPTools(opts *agent.Options, o *AgentOptions, cfg Config, servers *mcpRunning, warn func(string)) error {
	extra, err := servers.tools(warn)
	if err != nil {
		return err
	}
	if len(o.recordedMCP) > 0 {
		for _, w := range mcpChanges(o.recordedMCP, extra) {
			warn(w)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	readOnly := o.Command == "ask" || gateMode(o, cfg) == string(tools.ModePlan)
	var offered []tools.Tool
	size := 0
	for _, t := range extra {
		if !readOnly || t.ReadOnly() {
			offered = append(offered, t)
			b, _ := json.Marshal(t.Spec())
			size += len(b)
		}
	}
	ts := opts.Tools.Tools()
	if size <= mcp.DefaultBudget || len(offered) == 0 {
		opts.Tools = tools.NewRegistry(append(ts, offered...)...)
		return nil
	}
	// Past the budget the definitions are found on demand: mcp_search
	// returns matching ones and makes them callable.
	var reg *tools.Registry
	search := mcp.NewSearch(offered, func(names ...string) { reg.Reveal(names...) })
	reg = tools.NewRegistry(append(ts, search)...)
	reg.Defer(offered...)
	reg.Reveal(o.mcpUsed(offered)...)
	opts.Tools = reg
	return nil
}

// mcpUsed returns the MCP tools a resumed session already called or found
// with mcp_search: they stay described to the model.
func (o *AgentOptions) mcpUsed(ts []tools.Tool) []string {
	if len(o.usedTools) == 0 {
		return nil
	}
	var out []string
	for _, t := range ts {
		name := t.Spec().Name
		for _, u := range o.usedTools {
			if u == name || strings.Contains(u, `"name":"`+name+`"`) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// usedTools returns the names of the tools a session called and the
// results of its searches for tools.
func usedTools(es []session.Entry) []string {
	var out []string
	for _, e := range es {
		switch e.Type {
		case session.TypeToolCall:
			var d session.ToolCallData
			if e.Decode(&d) == nil && strings.HasPrefix(d.Name, "mcp__") {
				out = append(out, d.Name)
			}
		case session.TypeToolResult:
			var d session.ToolResultData
			if e.Decode(&d) == nil && d.Name == mcp.SearchName {
				out = append(out, d.Content)
			}
		}
	}
	return out
}

// mcpRecord is what the start entry records of the run's MCP servers.
func mcpRecord(r *mcpRunning) []session.MCPServerData {
	if r == nil {
		return nil
	}
	<-r.done
	var out []session.MCPServerData
	for _, c := range r.m.Servers() {
		if c.State != mcp.StateReady {
			continue
		}
		d := session.MCPServerData{Name: c.Server.Name, Transport: c.Server.Transport(), Source: c.Server.Source, Tools: map[string]string{}}
		for _, t := range c.Tools {
			d.Tools[t.Spec().Name] = mcp.ToolHash(t.Spec())
		}
		out = append(out, d)
	}
	return out
}

// recordedMCP returns what the session's start entry recorded of its MCP
// servers.
func recordedMCP(es []session.Entry) []session.MCPServerData {
	for _, e := range es {
		if e.Type == session.TypeStart {
			var d session.StartData
			if e.Decode(&d) == nil {
				return d.MCP
			}
		}
	}
	return nil
}

// mcpChanges compares the recorded MCP tools with the ones this run has.
func mcpChanges(recorded []session.MCPServerData, now []tools.Tool) []string {
	have := map[string]string{}
	for _, t := range now {
		have[t.Spec().Name] = mcp.ToolHash(t.Spec())
	}
	var out []string
	for _, s := range recorded {
		names := make([]string, 0, len(s.Tools))
		for n := range s.Tools {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			h, ok := have[n]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("MCP tool %s (server %s) was in the session but is gone now; calls to it will fail", n, s.Name))
			case h != s.Tools[n]:
				out = append(out, fmt.Sprintf("MCP tool %s (server %s) changed since the session was recorded (its description or input schema differs)", n, s.Name))
			}
		}
	}
	return out
}
