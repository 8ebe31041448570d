package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinks bounds symlink expansion in one path, as the kernel does, so a
// link loop is an error instead of a hang.
const maxSymlinks = 40

// Workspace is the set of directories the file tools may touch: the root
// (the repository's top level or the working directory) plus any --add-dir
// directories. Every root is held with its symlinks resolved, so a path is
// inside exactly when its own resolved form lies under one of them.
type Workspace struct {
	roots []string // resolved, cleaned; roots[0] is the main root
	given string   // the main root as given, cleaned, for Rel of unresolved paths
}

// NewWorkspace returns the workspace rooted at root with the extra
// directories; each must exist and be a directory.
func NewWorkspace(root string, extra ...string) (*Workspace, error) {
	w := &Workspace{}
	for i, dir := range append([]string{root}, extra...) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		if i == 0 {
			w.given = abs
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("workspace %s: not a directory", dir)
		}
		w.roots = append(w.roots, real)
	}
	return w, nil
}

// Root returns the main root, symlinks resolved.
func (w *Workspace) Root() string { return w.roots[0] }

// Roots returns every root, the main one first.
func (w *Workspace) Roots() []string { return append([]string(nil), w.roots...) }

// Resolve turns p (relative to Root, or absolute) into an absolute path with
// every symlink of its existing part resolved, and refuses it when that
// lands outside every root. Components that do not exist yet (a new file, new
// directories) are kept as written: they cannot be links. The tools then use
// the returned path, so what was checked is what is opened.
func (w *Workspace) Resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.roots[0], abs)
	}
	real, err := resolveExisting(filepath.Clean(abs))
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	if _, ok := w.rootOf(real); !ok {
		return "", fmt.Errorf("%s is outside the workspace (%s)", p, strings.Join(w.roots, ", "))
	}
	return real, nil
}

// ResolveForWrite is Resolve for a path about to be written. It also
// refuses an existing target that is not a regular file, and one with more
// than one hard link: the other names may lie outside the workspace and
// nothing cheap proves they do not, so writing it is never allowed (reading
// is, as package managers hard-link whole trees).
func (w *Workspace) ResolveForWrite(p string) (string, error) {
	abs, err := w.Resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("stat %s: %w", p, err)
	case fi.IsDir():
		return "", fmt.Errorf("%s is a directory", p)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", p)
	case linkCount(fi) > 1:
		return "", fmt.Errorf("%s has %d hard links; decode does not write files whose other links may lie outside the workspace", p, linkCount(fi))
	}
	return abs, nil
}

// Inside reports whether the resolved absolute path abs lies under a root.
func (w *Workspace) Inside(abs string) bool {
	_, ok := w.rootOf(abs)
	return ok
}

// Rel returns abs relative to Root in slash form for display ("." for the
// root itself), or abs unchanged when it lies outside the main root.
func (w *Workspace) Rel(abs string) string {
	for _, root := range []string{w.roots[0], w.given} {
		if rel, ok := relUnder(root, abs); ok {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}

// rootOf returns the root that contains abs.
func (w *Workspace) rootOf(abs string) (string, bool) {
	for _, root := range w.roots {
		if _, ok := relUnder(root, abs); ok {
			return root, true
		}
	}
	return "", false
}

// relUnder returns abs relative to root when abs is root or below it.
func relUnder(root, abs string) (string, bool) {
	if abs == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if !strings.HasPrefix(abs, prefix) {
		return "", false
	}
	return abs[len(prefix):], true
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the clean absolute path p, component by component, and appends the
// missing rest. Unlike filepath.EvalSymlinks it follows a dangling link to
// where a new file would really be created.
func resolveExisting(p string) (string, error) {
	vol := filepath.VolumeName(p)
	done := vol + string(filepath.Separator)
	rest := splitPath(p[len(vol):])
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "." {
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(rest) > 0 && !fi.IsDir() {
				return "", fmt.Errorf("%s is not a directory", next)
			}
			done = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			vol = filepath.VolumeName(target)
			done = vol + string(filepath.Separator)
			target = target[len(vol):]
		}
		rest = append(splitPath(target), rest...)
	}
	return done, nil
}

// splitPath splits p into its non-empty components.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == filepath.Separator || r == '/' })
}
