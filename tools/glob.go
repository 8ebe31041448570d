package tools

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

//go:embed glob.md
var globDesc string

// globMax caps the paths glob lists.
const globMax = 200

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

type globTool struct{ ws *Workspace }

func newGlobTool(w *Workspace) Tool {
	g := &globTool{ws: w}
	return newFuncTool("glob", globDesc, true, g.run)
}

// pathPattern matches slash paths relative to a search directory: a pattern
// without a slash matches the file name at any depth, as in .gitignore.
type pathPattern struct {
	pattern  string
	baseOnly bool
}

// newPathPattern checks a doublestar pattern; the error is for the model.
func newPathPattern(p string) (pathPattern, error) {
	p = strings.TrimPrefix(filepath.ToSlash(p), "./")
	if !doublestar.ValidatePattern(p) {
		return pathPattern{}, fmt.Errorf("invalid glob pattern %q", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return pathPattern{}, fmt.Errorf("glob pattern %q contains ..; set path to search another directory", p)
		}
	}
	return pathPattern{pattern: p, baseOnly: !strings.Contains(p, "/")}, nil
}

func (pp pathPattern) match(rel string) bool {
	if pp.baseOnly {
		rel = path.Base(rel)
	}
	return doublestar.MatchUnvalidated(pp.pattern, rel)
}

func (g *globTool) run(ctx context.Context, a globArgs) (Result, error) {
	pattern, dir := a.Pattern, a.Path
	if path.IsAbs(filepath.ToSlash(pattern)) {
		// An absolute pattern names its own directory.
		dir, pattern = doublestar.SplitPattern(filepath.ToSlash(pattern))
	}
	pp, err := newPathPattern(pattern)
	if err != nil {
		return errResult("glob: bad pattern", err.Error()), nil
	}
	base, res, ok := searchDir(g.ws, dir, "glob", false)
	if !ok {
		return res, nil
	}
	type hit struct {
		rel string
		mod time.Time
	}
	var hits []hit
	err = walkFiles(ctx, g.ws, g.walkStart(base, pp), func(abs string, d fs.DirEntry) error {
		rel, _ := relUnder(base, abs)
		if !pp.match(filepath.ToSlash(rel)) {
			return nil
		}
		var mod time.Time
		if fi, err := d.Info(); err == nil {
			mod = fi.ModTime()
		}
		hits = append(hits, hit{g.ws.Rel(abs), mod})
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("glob %s: %w", pattern, err)
	}
	where := g.ws.Rel(base)
	if len(hits) == 0 {
		return Result{Content: fmt.Sprintf("No files match %s in %s.", pattern, where), Note: "glob " + pattern + ": no files"}, nil
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mod.Equal(hits[j].mod) {
			return hits[i].mod.After(hits[j].mod)
		}
		return hits[i].rel < hits[j].rel
	})
	var b strings.Builder
	for _, h := range hits[:min(len(hits), globMax)] {
		b.WriteString(h.rel)
		b.WriteByte('\n')
	}
	if len(hits) > globMax {
		fmt.Fprintf(&b, "(%d of %d files shown, newest first; narrow the pattern or path)\n", globMax, len(hits))
	}
	return Result{Content: b.String(), Note: fmt.Sprintf("glob %s: %d files", pattern, len(hits))}, nil
}

// walkStart narrows the walk to the pattern's literal leading directories
// ("cmd/**/*.go" walks only cmd), unless they pass through a symlink, which
// the walk would not follow either.
func (g *globTool) walkStart(base string, pp pathPattern) string {
	if pp.baseOnly {
		return base
	}
	prefix, _ := doublestar.SplitPattern(pp.pattern)
	if prefix == "." || prefix == "" {
		return base
	}
	start := filepath.Join(base, filepath.FromSlash(prefix))
	if real, err := resolveExisting(start); err != nil || real != start {
		return base
	}
	return start
}

// searchDir resolves the directory (or, when files are allowed, the file) a
// search starts from; an empty dir is the workspace root.
func searchDir(ws *Workspace, dir, tool string, fileOK bool) (string, Result, bool) {
	if dir == "" {
		return ws.Root(), Result{}, true
	}
	abs, err := ws.Resolve(dir)
	if err != nil {
		return "", errResult(tool+": refused", err.Error()), false
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", errResult(tool+": not found", fmt.Sprintf("%s does not exist.", dir)), false
	case !fi.IsDir() && !fileOK:
		return "", errResult(tool+": not a directory", fmt.Sprintf("%s is not a directory.", dir)), false
	}
	return abs, Result{}, true
}
