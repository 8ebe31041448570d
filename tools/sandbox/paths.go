package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// SystemRead are the system directories every sandboxed command may read.
var SystemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/dev", "/proc",
	"/sys/fs/cgroup", "/sys/devices/system/cpu", // CPU limits, read by Go's and node's runtimes
}

// Toolchains returns the toolchain directories a build reads (read) and
// the caches it writes (write), as env and the usual defaults place them:
// GOROOT, GOMODCACHE, GOCACHE, the npm, cargo, rustup and pip caches, and
// git's own config files (~/.gitconfig, $XDG_CONFIG_HOME/git/{config,ignore,attributes}),
// and the directories on PATH (with a version manager's root for its shims).
// Only directories that exist are returned.
func Toolchains(env []string) (read, write []string) {
	home := envValue(env, "HOME")
	under := func(parts ...string) string {
		if home == "" {
			return ""
		}
		return filepath.Join(append([]string{home}, parts...)...)
	}
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	goroot := envValue(env, "GOROOT")
	if goroot == "" {
		if p, err := lookPath("go", env); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				goroot = filepath.Dir(filepath.Dir(real))
			}
		}
	}
	gopath := first(strings.Split(envValue(env, "GOPATH"), ":")[0], under("go"))
	cacheHome := first(envValue(env, "XDG_CACHE_HOME"), under(".cache"))
	configHome := first(envValue(env, "XDG_CONFIG_HOME"), under(".config"))
	read = []string{goroot, first(envValue(env, "RUSTUP_HOME"), under(".rustup")),
		// git stops on a config file it may not read, so its own
		// (identity, aliases, ignores) are readable; credentials are not.
		under(".gitconfig"), filepath.Join(configHome, "git", "config"),
		filepath.Join(configHome, "git", "ignore"), filepath.Join(configHome, "git", "attributes"),
	}
	write = []string{
		first(envValue(env, "GOMODCACHE"), filepath.Join(gopath, "pkg", "mod")),
		first(envValue(env, "GOCACHE"), filepath.Join(cacheHome, "go-build")),
		first(envValue(env, "npm_config_cache"), envValue(env, "NPM_CONFIG_CACHE"), under(".npm")),
		first(envValue(env, "CARGO_HOME"), under(".cargo")),
		first(envValue(env, "PIP_CACHE_DIR"), filepath.Join(cacheHome, "pip")),
	}
	// The directories on PATH hold programs to run (~/.local/bin,
	// ~/.cargo/bin, a version manager's shims and its root).
	for _, d := range strings.Split(envValue(env, "PATH"), ":") {
		if d == "" || d == "/" || d == home || !filepath.IsAbs(d) {
			continue
		}
		read = append(read, d)
		if filepath.Base(d) == "shims" {
			read = append(read, filepath.Dir(d))
		}
	}
	read = append(read, envValue(env, "PYENV_ROOT"), envValue(env, "NVM_DIR"))
	return existing(read), existing(write)
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// GitPaths returns, for a workspace root, the git directories a commit
// writes that lie outside it (a linked worktree's own and common git
// directory), the paths no command may write (hooks, config, decode's refs
// and packed-refs, which can hold them; the root's .decode; a linked
// worktree's .git file and commondir) and the git directories to pin, so
// that no command can rename or replace them. Missing protected
// directories are created empty (git ignores empty directories), so a
// command cannot create them either.
func GitPaths(root string) (write, protected, pinned []string) {
	protected = append(protected, mkdirAll(filepath.Join(root, ".decode")))
	gitDir := filepath.Join(root, ".git")
	common := gitDir
	if data, err := os.ReadFile(gitDir); err == nil {
		// A linked worktree: ".git" is a file naming its git directory,
		// whose "commondir" names the repository's.
		d, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
		if !ok {
			return nil, protected, nil
		}
		gitDir = strings.TrimSpace(d)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(root, gitDir)
		}
		common = gitDir
		if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
			common = strings.TrimSpace(string(c))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitDir, common)
			}
		}
		write = append(write, filepath.Clean(gitDir), filepath.Clean(common))
		protected = append(protected, filepath.Join(root, ".git"), filepath.Join(gitDir, "config.worktree"),
			filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "gitdir"))
		pinned = append(pinned, filepath.Clean(gitDir))
	} else if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil, protected, nil
	}
	common = filepath.Clean(common)
	pinned = append(pinned, common)
	if f, err := os.OpenFile(filepath.Join(common, "packed-refs"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
		f.Close() // git reads an empty packed-refs as no packed refs
	}
	protected = append(protected, filepath.Join(common, "packed-refs"),
		mkdirAll(filepath.Join(common, "hooks")),
		filepath.Join(common, "config"),
		filepath.Join(common, "config.worktree"),
		mkdirAll(filepath.Join(common, "refs", "decode")),
		filepath.Join(common, "logs", "refs", "decode"),
	)
	return write, protected, pinned
}

func mkdirAll(p string) string {
	_ = os.MkdirAll(p, 0o755)
	return p
}

// split grants write access to roots except the protected paths inside
// them, for when no mount namespace can make those read-only: Landlock
// only allows, so each directory on the way to a protected path is granted
// read-only and each of its other entries read-write. The cost: nothing
// can be created, removed or renamed directly in those directories.
func split(roots, protected []string) (rw, ro []string) {
	for _, root := range roots {
		var inside []string
		for _, p := range protected {
			if rel, err := filepath.Rel(root, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				inside = append(inside, p)
			}
		}
		if len(inside) == 0 {
			rw = append(rw, root)
			continue
		}
		r, o := splitDir(root, inside)
		rw, ro = append(rw, r...), append(ro, o...)
	}
	return rw, ro
}

// splitDir grants dir's entries that lead to no protected path read-write
// and recurses into those that do; dir itself and the protected paths are
// read-only.
func splitDir(dir string, protected []string) (rw, ro []string) {
	ro = append(ro, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ro
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		var below []string
		hit := false
		for _, q := range protected {
			switch {
			case q == p:
				hit = true
			case strings.HasPrefix(q, p+string(filepath.Separator)):
				below = append(below, q)
			}
		}
		switch {
		case hit:
			ro = append(ro, p)
		case len(below) > 0 && e.IsDir():
			r, o := splitDir(p, below)
			rw, ro = append(rw, r...), append(ro, o...)
		default:
			rw = append(rw, p)
		}
	}
	return rw, ro
}
