package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Env is the part of the environment the store reads. It is injected so that
// tests and callers decide what the store sees.
type Env struct {
	Getenv func(string) string
	Home   string
}

func (e Env) get(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

// findGitDir finds the git directory for dir the way git does, without
// running git: GIT_DIR wins; otherwise walk up from dir looking for a .git
// directory or gitfile, or a bare repository, never entering a directory
// listed in GIT_CEILING_DIRECTORIES. It returns "" when there is none.
func findGitDir(dir string, env Env) (string, error) {
	if gd := env.get("GIT_DIR"); gd != "" {
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		resolved, err := resolveGitPath(gd)
		if err != nil {
			return "", fmt.Errorf("GIT_DIR=%s: %w", gd, err)
		}
		if !isGitDir(resolved, env) {
			return "", fmt.Errorf("GIT_DIR=%s: not a git repository", gd)
		}
		return resolved, nil
	}
	ceiling := ceilingFor(dir, env.get("GIT_CEILING_DIRECTORIES"))
	for d := dir; ; {
		if ceiling != "" && !strictlyUnder(d, ceiling) {
			return "", nil
		}
		if gd, err := resolveGitPath(filepath.Join(d, ".git")); err == nil && isGitDir(gd, env) {
			return gd, nil
		}
		if isGitDir(d, env) {
			return d, nil // a bare repository
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", nil
		}
		d = parent
	}
}

// resolveGitPath returns p itself when it is a directory, or the directory a
// gitfile ("gitdir: <path>", used by linked worktrees and submodules) names.
func resolveGitPath(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", fmt.Errorf("%s: invalid gitfile format", p)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	return filepath.Clean(target), nil
}

// isGitDir mirrors git's is_git_directory: a HEAD, and objects and refs in
// the common directory.
func isGitDir(gd string, env Env) bool {
	if _, err := os.Lstat(filepath.Join(gd, "HEAD")); err != nil {
		return false
	}
	common := commonDir(gd, env)
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(common, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// commonDir returns the directory shared by all worktrees of the repository
// whose git directory is gd: GIT_COMMON_DIR, else the one named in its
// commondir file, else gd itself.
func commonDir(gd string, env Env) string {
	if cd := env.get("GIT_COMMON_DIR"); cd != "" {
		return cd
	}
	b, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return gd
	}
	cd := strings.TrimSpace(string(b))
	if cd == "" {
		return gd
	}
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gd, cd)
	}
	return filepath.Clean(cd)
}

// ceilingFor returns the longest directory of the colon-separated list that
// is a proper ancestor of dir, as git does: relative entries are ignored, and
// entries after an empty one are not resolved through symlinks.
func ceilingFor(dir, list string) string {
	best := ""
	resolve := true
	for _, c := range strings.Split(list, ":") {
		if c == "" {
			resolve = false
			continue
		}
		if !filepath.IsAbs(c) {
			continue
		}
		c = filepath.Clean(c)
		if resolve {
			r, err := filepath.EvalSymlinks(c)
			if err != nil {
				continue
			}
			c = r
		}
		if strictlyUnder(dir, c) && len(c) > len(best) {
			best = c
		}
	}
	return best
}

// strictlyUnder reports whether d lies below ancestor (and is not it).
func strictlyUnder(d, ancestor string) bool {
	if ancestor == string(filepath.Separator) {
		return d != ancestor
	}
	return strings.HasPrefix(d, ancestor+string(filepath.Separator))
}

// storeDir returns where the bare store lives outside any repository.
func storeDir(env Env) (string, error) {
	if d := env.get("DECODE_STORE"); d != "" {
		return filepath.Abs(d)
	}
	if d := env.get("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "decode"), nil
	}
	home := env.Home
	if home == "" {
		home = env.get("HOME")
	}
	if home == "" {
		return "", errors.New("no session store: not in a git repository and neither DECODE_STORE, XDG_STATE_HOME nor HOME is set")
	}
	return filepath.Join(home, ".local", "state", "decode"), nil
}

// initBare creates a minimal bare repository at dir unless one is there.
// It is what `git init --bare` writes that git needs to accept the directory.
func initBare(dir string) error {
	for _, sub := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create store %s: %w", dir, err)
		}
	}
	files := []struct{ name, text string }{
		{"config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"},
		{"HEAD", "ref: refs/heads/main\n"},
		{"description", "decode sessions\n"},
	}
	for _, f := range files {
		if err := writeNew(filepath.Join(dir, f.name), []byte(f.text)); err != nil {
			return fmt.Errorf("create store %s: %w", dir, err)
		}
	}
	return nil
}

// writeNew writes a file that must not exist yet; an existing one is kept,
// so concurrent first uses of the store do not clobber each other.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
