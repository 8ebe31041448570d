package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	ignore "github.com/sabhiram/go-gitignore"
)

// ignoreLayer is one ignore file and the directory its patterns are
// relative to.
type ignoreLayer struct {
	dir string
	gi  *ignore.GitIgnore
}

// ignoreStack holds the ignore files that apply in one directory, outermost
// first. A path is ignored when any of them ignores it; a deeper "!pattern"
// cannot re-include what an outer file excludes (go-gitignore does not say
// which negations matched), a rare case that errs towards showing less.
type ignoreStack []ignoreLayer

// with returns st plus the ignore file at path, if it can be read; st itself
// is never changed, so sibling directories can share it.
func (st ignoreStack) with(dir, path string) ignoreStack {
	gi, err := ignore.CompileIgnoreFile(path)
	if err != nil {
		return st
	}
	return append(st[:len(st):len(st)], ignoreLayer{dir: dir, gi: gi})
}

// ignored reports whether abs, a directory when isDir, is excluded.
func (st ignoreStack) ignored(abs string, isDir bool) bool {
	for _, l := range st {
		rel, ok := relUnder(l.dir, abs)
		if !ok || rel == "." {
			continue
		}
		rel = filepath.ToSlash(rel)
		if isDir {
			rel += "/"
		}
		if l.gi.MatchesPath(rel) {
			return true
		}
	}
	return false
}

// ancestorIgnores returns the ignore files that apply to the directory
// start from its workspace root down to its parent: the root's
// .git/info/exclude and every .gitignore on the way. A directory the user
// named explicitly is searched even when those rules exclude it.
func ancestorIgnores(ws *Workspace, start string) ignoreStack {
	root, ok := ws.rootOf(start)
	if !ok {
		return nil
	}
	st := ignoreStack(nil).with(root, filepath.Join(root, ".git", "info", "exclude"))
	rel, _ := relUnder(root, start)
	dir := root
	for _, c := range splitPath(rel) {
		if c == "." {
			continue
		}
		st = st.with(dir, filepath.Join(dir, ".gitignore"))
		dir = filepath.Join(dir, c)
	}
	if st.ignored(start, true) {
		return nil
	}
	return st
}

// walkFiles calls fn for every regular file under dir that no .gitignore
// excludes, in path order (each directory's entries sorted by name). It
// skips .git, symlinks and unreadable directories; an error from fn or
// the context ends the walk and is returned.
func walkFiles(ctx context.Context, ws *Workspace, dir string, fn func(abs string, d fs.DirEntry) error) error {
	return walkDir(ctx, dir, ancestorIgnores(ws, dir), fn)
}

func walkDir(ctx context.Context, dir string, st ignoreStack, fn func(string, fs.DirEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			st = st.with(dir, filepath.Join(dir, ".gitignore"))
			break
		}
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		abs := filepath.Join(dir, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if !st.ignored(abs, true) {
				if err := walkDir(ctx, abs, st, fn); err != nil {
					return err
				}
			}
		case t.IsRegular():
			if !st.ignored(abs, false) {
				if err := fn(abs, e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
