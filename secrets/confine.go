// Package secrets keeps what decode must not leak from leaking: it confines
// the files decode reads from a repository to that repository, and it is the
// one redactor every exit (sessions, output, logs, spill files, hook input,
// model requests) goes through. It imports nothing from the project, so
// every layer can use it.
package secrets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is wrapped by Confine's error when a file inside a repository
// resolves (through a symlink) to somewhere outside it.
var ErrOutside = errors.New("resolves outside the repository")

// Confine checks a file decode is about to read on its own account (an
// AGENTS.md, a skill, a config, a plan or schema file). A path that lies
// inside root (the repository, or the working directory outside one) must,
// with every symlink resolved, stay inside root or one of also (the user's
// own config directories); otherwise the error wraps ErrOutside and names
// where it leads. A path outside root is the user's own choice and is
// returned as is, as is every path when root is "". A missing file (or a
// dangling symlink) passes: opening it fails with the usual error.
func Confine(path, root string, also ...string) error {
	if root == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	rootAbs, _ := filepath.Abs(root)
	rootReal := realPath(rootAbs)
	// Inside the repository by its name, or by where its folder really is.
	physical := filepath.Join(realPath(filepath.Dir(abs)), filepath.Base(abs))
	if !within(abs, rootAbs) && !within(abs, rootReal) && !within(physical, rootReal) {
		return nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil // missing (or a dangling link): the caller's open says so
	}
	if within(real, rootReal) {
		return nil
	}
	for _, a := range also {
		if a != "" && within(real, realPath(a)) {
			return nil
		}
	}
	return fmt.Errorf("%s %w %s (it leads to %s); not read", path, ErrOutside, rootReal, real)
}

// Open opens path for reading after Confine has allowed it, and checks
// again what it opened (where the system can say which file an open
// descriptor is), so a symlink swapped in between the check and the open
// (a race) is refused too.
func Open(path, root string, also ...string) (*os.File, error) {
	if err := Confine(path, root, also...); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil || root == "" {
		return f, err
	}
	if real, ok := openedPath(f); ok && insideAny(path, root) && !confinedTo(real, realPath(root), also) {
		f.Close()
		return nil, fmt.Errorf("%s %w %s (it led to %s when opened); not read", path, ErrOutside, realPath(root), real)
	}
	return f, nil
}

// ReadFile reads path after Open has allowed it.
func ReadFile(path, root string, also ...string) ([]byte, error) {
	f, err := Open(path, root, also...)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// openedPath names the file an open descriptor refers to, on Linux.
func openedPath(f *os.File) (string, bool) {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}

// confinedTo reports whether real lies in rootReal or one of also.
func confinedTo(real, rootReal string, also []string) bool {
	if within(real, rootReal) {
		return true
	}
	for _, a := range also {
		if a != "" && within(real, realPath(a)) {
			return true
		}
	}
	return false
}

// insideAny reports whether path is inside root by name or by where its
// folder is (the paths Confine confines).
func insideAny(path, root string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rootAbs, _ := filepath.Abs(root)
	rootReal := realPath(rootAbs)
	physical := filepath.Join(realPath(filepath.Dir(abs)), filepath.Base(abs))
	return within(abs, rootAbs) || within(abs, rootReal) || within(physical, rootReal)
}

// IsOutside reports whether err is Confine's refusal.
func IsOutside(err error) bool { return errors.Is(err, ErrOutside) }

// realPath resolves p's symlinks as far as p exists.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Resolve the longest existing prefix, so a missing config dir under a
	// symlinked home still compares equal.
	dir, rest := abs, ""
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return abs
		}
	}
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}
