package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"decode/agent"
	"decode/secrets"
	"decode/tools/mcp"
)

// trustItem is one file that trusting a repository covers, with the sha256
// of its content: the config files themselves, and every file inside the
// repository that something they run names (a hook's script, an MCP
// server's command), so that a `git pull` changing one revokes the trust.
type trustItem struct {
	Path string `json:"path"` // relative to the repository
	What string `json:"what"` // "config", "hook before_tool", "mcp server x", …
	Hash string `json:"hash"` // hex sha256 of the content; "missing"; or "-> TARGET sha256" for a link out
}

// runSources list the command lines a repository's config would run, by
// what runs them. A new kind of thing a repository can run adds a source
// here, and trust covers its files from then on.
var runSources = []func(c Config, servers []mcp.Server) map[string][]string{
	func(c Config, _ []mcp.Server) map[string][]string {
		out := map[string][]string{}
		hooks := c.Hooks.commands()
		for _, ev := range agent.HookEvents {
			for _, cmd := range hooks[ev] {
				out["hook "+ev] = append(out["hook "+ev], cmd)
			}
		}
		return out
	},
	func(c Config, servers []mcp.Server) map[string][]string {
		out := map[string][]string{}
		for _, s := range append(sortedServers(c.MCPServers), servers...) {
			if s.Command != "" {
				out["mcp server "+s.Name] = append(out["mcp server "+s.Name], strings.Join(append([]string{s.Command}, s.Args...), " "))
			}
		}
		return out
	},
}

// trustState reads what trusting the repository at root covers: data is
// hashed into the trust (the config, the .mcp.json, each run file's path
// and hash), items name each file. ok is false when there is neither a
// config nor a .mcp.json.
func trustState(root, path, configDir string) (data []byte, items []trustItem, ok bool) {
	cfgData, err := secrets.ReadFile(path, root, configDir)
	cfgOK := err == nil
	data = cfgData
	var c Config
	if cfgOK {
		items = append(items, trustItem{Path: rel(root, path), What: "config", Hash: sha(cfgData)})
		_ = decodeConfig(&c, path, cfgData) // a broken config runs nothing
	}
	var servers []mcp.Server
	mcpData, err := secrets.ReadFile(filepath.Join(root, ".mcp.json"), root)
	if err == nil {
		data = append(append(data, "\n\x00.mcp.json\x00\n"...), mcpData...)
		items = append(items, trustItem{Path: ".mcp.json", What: "config", Hash: sha(mcpData)})
		if s, err := mcp.ParseMCPJSON(mcpData, func(string) string { return "" }); err == nil {
			servers = s
		}
	} else if !cfgOK {
		return nil, nil, false
	}
	for _, src := range runSources {
		runs := src(c, servers)
		whats := make([]string, 0, len(runs))
		for w := range runs {
			whats = append(whats, w)
		}
		sort.Strings(whats)
		for _, what := range whats {
			for _, line := range runs[what] {
				for _, p := range namedFiles(root, line) {
					it := trustItem{Path: rel(root, p), What: what, Hash: fileHash(root, p)}
					items = append(items, it)
					data = append(data, fmt.Sprintf("\n\x00run\x00%s\x00%s\x00%s", it.What, it.Path, it.Hash)...)
				}
			}
		}
	}
	return data, items, true
}

// namedFiles returns the files inside root that a command line names: each
// word (quotes stripped) that is a path inside the repository, existing or
// not when it has a slash, so that `sh .decode/hooks/pre.sh` covers the
// script and not only the shell.
func namedFiles(root, line string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		w = strings.Trim(w, `"'`)
		if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, "$`*?;|&<>()") {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		p = filepath.Clean(p)
		if p == root || !strings.HasPrefix(p, root+string(filepath.Separator)) {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() || err != nil && strings.Contains(w, "/") {
			out = append(out, p)
		}
	}
	return out
}

// fileHash is the sha256 of the file at p, whatever it links to; a link
// that leads out of the repository names its target too.
func fileHash(root, p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "missing"
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return "unreadable"
	}
	if r := canonicalPath(root); !strings.HasPrefix(real, r+string(filepath.Separator)) {
		return "-> " + real + " " + sha(data)
	}
	return sha(data)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// trustFilesPath keeps, beside the trust list, the files each trust
// covered, so a revoked trust can say what changed.
func (s trustStore) filesPath() string { return s.path + "-files.json" }

func (s trustStore) loadItems() map[string][]trustItem {
	m := map[string][]trustItem{}
	data, err := os.ReadFile(s.filesPath())
	if err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

// setItems records (or, with nil, forgets) the files root's trust covers.
func (s trustStore) setItems(root string, items []trustItem) error {
	m := s.loadItems()
	if items == nil {
		delete(m, root)
	} else {
		m[root] = items
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.filesPath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write trust list: %w", err)
	}
	return os.Rename(tmp, s.filesPath())
}

// changedSince lists the files whose content differs from when root was
// trusted (or that appeared or went away), for the warning that says the
// trust was revoked.
func (s trustStore) changedSince(root string, now []trustItem) []string {
	was, ok := s.loadItems()[canonicalPath(root)]
	if !ok {
		return nil
	}
	key := func(it trustItem) string { return it.What + "\x00" + it.Path }
	old := map[string]string{}
	for _, it := range was {
		old[key(it)] = it.Hash
	}
	seen := map[string]bool{}
	var out []string
	for _, it := range now {
		seen[key(it)] = true
		if h, ok := old[key(it)]; !ok || h != it.Hash {
			out = append(out, it.Path)
		}
	}
	for _, it := range was {
		if !seen[key(it)] {
			out = append(out, it.Path)
		}
	}
	sort.Strings(out)
	return dedup(out)
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// trustRevoked says, for a repository the user trusted before, which files
// changed since; "" when it was never trusted or nothing it covers changed.
func (f *Factory) trustRevoked(root, path string) string {
	_, items, ok := trustState(root, path, f.configDir())
	if !ok {
		return ""
	}
	changed := trustStore{path: filepath.Join(f.configDir(), "trusted")}.changedSince(root, items)
	if len(changed) == 0 {
		return ""
	}
	return "trust revoked: changed since decode trust: " + strings.Join(changed, ", ")
}
