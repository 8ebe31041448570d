package commands

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/secrets"
)

// TrustOptions are the inputs of `decode trust`.
type TrustOptions struct {
	F      *Factory
	Dir    string
	Revoke bool
	List   bool
}

// NewCmdTrust builds `decode trust`.
func NewCmdTrust(f *Factory, runF func(*cli.Context, *TrustOptions) error) *cli.Command {
	if runF == nil {
		runF = trustRun
	}
	return &cli.Command{
		Name:      "trust",
		Usage:     "let this repository's .decode/config.toml run hooks and widen permissions",
		ArgsUsage: "[DIR]",
		Description: `A repository's own .decode/config.toml is not trusted by default: its hooks
do not run, and its allow rules, mode, providers and MCP servers are ignored,
nor are the MCP servers of its .mcp.json started, so running decode in a
freshly cloned repository cannot execute anything it brings. decode trust
shows what the config would enable and trusts it as it is now: the trust is
keyed by the repository's path and the sha256 of .decode/config.toml, of
.mcp.json, and of every file inside the repository that a hook or MCP server
command of theirs names (sh .decode/hooks/pre.sh covers the script), so any
change to one of them (a git pull, say) revokes the trust until decode trust
again; decode says which file changed. It lists what it trusts: the hooks,
the permission changes (allow rules, mode), the base URLs your API keys
would be sent to, the MCP servers, and each file with its hash.

   decode trust              # trust this repository's config as it is
   decode trust --list       # the trusted repositories
   decode trust --revoke`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "revoke", Usage: "stop trusting the repository"},
			&cli.BoolFlag{Name: "list", Usage: "list the trusted repositories"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("trust takes at most one DIR")
			}
			dir := c.String("dir")
			if c.NArg() == 1 {
				dir = c.Args().First()
			}
			return runF(c, &TrustOptions{F: f, Dir: dir, Revoke: c.Bool("revoke"), List: c.Bool("list")})
		},
	}
}

func trustRun(_ *cli.Context, o *TrustOptions) error {
	ts := trustStore{path: filepath.Join(o.F.configDir(), "trusted")}
	if o.List {
		list, err := ts.load()
		if err != nil {
			return err
		}
		for _, t := range list {
			fmt.Fprintf(o.F.IO.Out, "%s  %s\n", t.hash[:12], t.root)
		}
		return nil
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	root := repoRoot(dir)
	if root == "" {
		return fmt.Errorf("%s is not in a git repository: there is no repository config to trust", dir)
	}
	root = canonicalPath(root)
	if o.Revoke {
		if err := ts.set(root, ""); err != nil {
			return err
		}
		if err := ts.setItems(root, nil); err != nil {
			return err
		}
		fmt.Fprintf(o.F.IO.Err, "no longer trusted: %s\n", root)
		return nil
	}
	path := filepath.Join(root, ".decode", "config.toml")
	data, err := secrets.ReadFile(path, root, o.F.configDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nothing to trust: %w", err)
	}
	all, items, ok := trustState(root, path, o.F.configDir())
	if !ok {
		return fmt.Errorf("nothing to trust: %s has neither .decode/config.toml nor .mcp.json", root)
	}
	var c Config
	if err == nil {
		if err := decodeConfig(&c, path, data); err != nil {
			return err
		}
	}
	servers, err := readMCPJSON(root, o.F.Getenv)
	if err != nil {
		return err
	}
	describeTrust(o.F.IO.Out, c)
	for _, s := range servers {
		fmt.Fprintf(o.F.IO.Out, "mcp server %s (.mcp.json): %s\n", s.Name, serverTarget(s))
	}
	for _, it := range items {
		if it.What != "config" {
			fmt.Fprintf(o.F.IO.Out, "file %s (%s): sha256 %s\n", it.Path, it.What, shortHashOf(it.Hash))
		}
	}
	if err := ts.set(root, configHash(all)); err != nil {
		return err
	}
	if err := ts.setItems(root, items); err != nil {
		return err
	}
	files := ".decode/config.toml is"
	switch _, err := os.Stat(path); {
	case len(servers) > 0 && err == nil:
		files = ".decode/config.toml and .mcp.json are"
	case len(servers) > 0:
		files = ".mcp.json is"
	}
	fmt.Fprintf(o.F.IO.Err, "trusted %s as its %s now (a change needs decode trust again)\n", root, files)
	return nil
}

// describeTrust prints what trusting a repository config enables.
func describeTrust(w io.Writer, c Config) {
	hooks := c.Hooks.commands()
	for _, ev := range agent.HookEvents {
		for _, cmd := range hooks[ev] {
			fmt.Fprintf(w, "hook %s: %s\n", ev, cmd)
		}
	}
	for _, r := range c.Allow {
		fmt.Fprintf(w, "allow %s\n", r)
	}
	if c.Mode != "" {
		fmt.Fprintf(w, "mode %s\n", c.Mode)
	}
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := c.Providers[n]
		line := fmt.Sprintf("provider %s: base_url %q, api_key_env %q", n, p.BaseURL, p.APIKeyEnv)
		if p.BaseURL != "" {
			line += fmt.Sprintf(" (your %s API key would be sent to %s)", n, p.BaseURL)
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range sortedServers(c.MCPServers) {
		fmt.Fprintf(w, "mcp server %s: %s\n", s.Name, serverTarget(s))
	}
}

func configHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func canonicalPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}

// trustStore is the user's list of trusted repository configs: one line
// per repository, "<sha256 of .decode/config.toml> <repository path>".
type trustStore struct{ path string }

type trustEntry struct{ hash, root string }

func (s trustStore) load() ([]trustEntry, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trust list: %w", err)
	}
	var out []trustEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		hash, root, ok := strings.Cut(sc.Text(), " ")
		if ok && len(hash) == 64 && root != "" {
			out = append(out, trustEntry{hash: hash, root: root})
		}
	}
	return out, nil
}

// trusted reports whether the config data of the repository at root is
// the one the user trusted.
func (s trustStore) trusted(root string, data []byte) bool {
	list, err := s.load()
	if err != nil {
		return false
	}
	root, hash := canonicalPath(root), configHash(data)
	for _, t := range list {
		if t.root == root && t.hash == hash {
			return true
		}
	}
	return false
}

// set records hash for root, or forgets root when hash is empty; the file
// is replaced whole (temporary file, then rename).
func (s trustStore) set(root, hash string) error {
	list, err := s.load()
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, t := range list {
		if t.root != root {
			fmt.Fprintf(&b, "%s %s\n", t.hash, t.root)
		}
	}
	if hash != "" {
		fmt.Fprintf(&b, "%s %s\n", hash, root)
	}
	if err := writeFileAtomic(s.path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write trust list: %w", err)
	}
	return nil
}

// shortHashOf shortens a trust item's hash for display.
func shortHashOf(h string) string {
	if len(h) == 64 {
		return h[:16]
	}
	return h
}
