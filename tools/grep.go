package tools

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

//go:embed grep.md
var grepDesc string

const (
	grepMaxLines    = 200      // matching lines shown
	grepMaxFiles    = 200      // files shown with files_only
	grepMaxBytes    = 50 << 10 // output shown
	grepMaxLineLen  = 400      // longer lines are cut
	grepMaxFileSize = 64 << 20 // larger files are skipped, and named in the result
)

type grepArgs struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path,omitempty"`
	Include         string `json:"include,omitempty" desc:"file glob"`
	Context         int    `json:"context,omitempty"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	FilesOnly       bool   `json:"files_only,omitempty"`
}

type grepTool struct{ ws *Workspace }

func newGrepTool(w *Workspace) Tool {
	g := &grepTool{ws: w}
	return newFuncTool("grep", grepDesc, true, g.run)
}

// grepQuery is a compiled search.
type grepQuery struct {
	re        *regexp.Regexp
	lit       []byte // a literal every matching line contains, or nil
	include   *pathPattern
	context   int
	filesOnly bool
}

func (g *grepTool) run(ctx context.Context, a grepArgs) (Result, error) {
	q, err := compileGrep(a)
	if err != nil {
		return errResult("grep: bad arguments", err.Error()), nil
	}
	start, res, ok := searchDir(g.ws, a.Path, "grep", true)
	if !ok {
		return res, nil
	}
	out, err := g.search(ctx, q, start)
	if err != nil {
		return Result{}, fmt.Errorf("grep %s: %w", a.Pattern, err)
	}
	return out.result(a.Pattern, g.ws.Rel(start)), nil
}

// compileGrep compiles the arguments into a query. Lines are matched one at
// a time, so ^ and $ mean the line's start and end.
func compileGrep(a grepArgs) (*grepQuery, error) {
	if a.Pattern == "" {
		return nil, fmt.Errorf("pattern is empty")
	}
	if a.Context < 0 {
		return nil, fmt.Errorf("context must be 0 or more")
	}
	expr := "(?m)" + a.Pattern
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression (RE2 syntax): %v", err)
	}
	q := &grepQuery{re: re, context: min(a.Context, 20), filesOnly: a.FilesOnly}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if lit := requiredLiteral(tree); lit != "" {
			q.lit = []byte(lit)
		}
	}
	if a.Include != "" {
		pp, err := newPathPattern(a.Include)
		if err != nil {
			return nil, err
		}
		q.include = &pp
	}
	return q, nil
}

// requiredLiteral returns the longest case-sensitive literal that every
// match of re contains, or "". Files without it are skipped with one
// bytes.Index, and only the lines holding it are run through the regex.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// grepJob is one file to search; seq is its place in path order.
type grepJob struct {
	seq int
	abs string
	rel string
}

// grepHit is the outcome of searching one file.
type grepHit struct {
	seq   int
	rel   string
	lines []grepLine
	more  bool // the file has matches beyond the ones kept
	// tooLarge: the file is over grepMaxFileSize and was not searched.
	tooLarge bool
}

// errGrepTooLarge marks a file over grepMaxFileSize.
var errGrepTooLarge = errors.New("too large to search")

// grepLine is one output line: a match or a context line.
type grepLine struct {
	no    int
	text  string
	match bool
}

// search runs q over start, a file or a directory. Files are found in path
// order by one walker and searched by a pool of workers; a collector puts
// the results back in path order and stops everything once the output is
// full, so the result is deterministic and early matches end the search.
func (g *grepTool) search(ctx context.Context, q *grepQuery, start string) (*grepOutput, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan grepJob, 256)
	hits := make(chan grepHit, 256)
	var walkErr error
	go func() {
		defer close(jobs)
		walkErr = g.walk(ctx, q, start, jobs)
	}()
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() { grepWorker(ctx, q, jobs, hits) })
	}
	go func() {
		wg.Wait()
		close(hits)
	}()

	out := &grepOutput{filesOnly: q.filesOnly, context: q.context}
	pending := map[int]grepHit{}
	next := 0
	for h := range hits {
		pending[h.seq] = h
		for h, ok := pending[next]; ok; h, ok = pending[next] {
			delete(pending, next)
			next++
			if h.tooLarge {
				out.skipped = append(out.skipped, h.rel)
			}
			if !out.full && out.add(h) {
				cancel()
			}
		}
	}
	if walkErr != nil && !out.full {
		return nil, walkErr
	}
	return out, nil
}

// walk sends every file to search to jobs, in path order.
func (g *grepTool) walk(ctx context.Context, q *grepQuery, start string, jobs chan<- grepJob) error {
	seq := 0
	send := func(abs string) error {
		select {
		case jobs <- grepJob{seq: seq, abs: abs, rel: g.ws.Rel(abs)}:
			seq++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fi, err := os.Stat(start); err == nil && !fi.IsDir() {
		return send(start)
	}
	return walkFiles(ctx, g.ws, start, func(abs string, _ fs.DirEntry) error {
		if q.include != nil {
			rel, _ := relUnder(start, abs)
			if !q.include.match(filepath.ToSlash(rel)) {
				return nil
			}
		}
		return send(abs)
	})
}

// grepWorker searches files from jobs until it is closed, reusing one
// buffer for every file. After cancellation it still answers each job, with
// nothing, so the walker never blocks.
func grepWorker(ctx context.Context, q *grepQuery, jobs <-chan grepJob, hits chan<- grepHit) {
	var buf []byte
	for job := range jobs {
		h := grepHit{seq: job.seq, rel: job.rel}
		if ctx.Err() == nil {
			data, err := readFileInto(buf, job.abs)
			h.tooLarge = errors.Is(err, errGrepTooLarge)
			if err == nil && !isBinary(data) {
				q.searchFile(data, &h)
			}
			buf = data[:0]
		}
		hits <- h
	}
}

// searchFile finds the matching lines of data, keeping at most
// grepMaxLines of them with their context.
func (q *grepQuery) searchFile(data []byte, h *grepHit) {
	matches := 0
	q.eachMatch(data, func(ls, le, no int) bool {
		if matches == grepMaxLines || q.filesOnly && matches == 1 {
			h.more = true
			return false
		}
		matches++
		if q.filesOnly {
			h.lines = append(h.lines, grepLine{no: no, match: true})
			return true
		}
		q.addContext(data, ls, no, h, false)
		h.lines = append(h.lines, grepLine{no: no, text: lineText(data[ls:le]), match: true})
		q.addContext(data, le, no, h, true)
		return true
	})
}

// eachMatch calls fn with the bounds and 1-based number of every line of
// data that q.re matches, in order, until fn returns false. Candidates come
// from the required literal when there is one, else from the regex run over
// the rest of the buffer; either way the line itself is then checked.
func (q *grepQuery) eachMatch(data []byte, fn func(ls, le, no int) bool) {
	no, counted := 1, 0
	for pos := 0; pos < len(data); {
		var cand int
		if q.lit != nil {
			i := bytes.Index(data[pos:], q.lit)
			if i < 0 {
				return
			}
			cand = pos + i
		} else {
			loc := q.re.FindIndex(data[pos:])
			if loc == nil {
				return
			}
			cand = pos + loc[0]
		}
		ls := pos + bytes.LastIndexByte(data[pos:cand], '\n') + 1
		le := len(data)
		if i := bytes.IndexByte(data[cand:], '\n'); i >= 0 {
			le = cand + i
		}
		no += bytes.Count(data[counted:ls], []byte("\n"))
		counted = ls
		if q.re.Match(data[ls:le]) && !fn(ls, le, no) {
			return
		}
		pos = le + 1
	}
}

// addContext adds up to q.context lines before the line starting at edge
// (after: the lines after the line ending at edge), skipping lines already
// added. Lines after a match that match themselves are left to eachMatch.
func (q *grepQuery) addContext(data []byte, edge, no int, h *grepHit, after bool) {
	if q.context == 0 {
		return
	}
	last := 0
	if n := len(h.lines); n > 0 {
		last = h.lines[n-1].no
	}
	if !after {
		var before []grepLine
		end := edge - 1 // the newline ending the previous line
		for k := 1; k <= q.context && end >= 0 && no-k > last; k++ {
			start := bytes.LastIndexByte(data[:end], '\n') + 1
			before = append(before, grepLine{no: no - k, text: lineText(data[start:end])})
			end = start - 1
		}
		for i := len(before) - 1; i >= 0; i-- {
			h.lines = append(h.lines, before[i])
		}
		return
	}
	start := edge + 1
	for k := 1; k <= q.context && start < len(data); k++ {
		end := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i
		}
		if q.re.Match(data[start:end]) {
			return
		}
		h.lines = append(h.lines, grepLine{no: no + k, text: lineText(data[start:end])})
		start = end + 1
	}
}

// lineText is a line as shown: without its CR, cut when very long.
func lineText(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > grepMaxLineLen {
		return cutString(string(line[:min(len(line), grepMaxLineLen+utf8.UTFMax)]), grepMaxLineLen) + " [line cut]"
	}
	return string(line)
}

// grepOutput collects hits in path order up to the caps.
type grepOutput struct {
	filesOnly bool
	context   int
	b         strings.Builder
	files     int // files with a match
	matches   int // matching lines shown
	prevNo    int // last line number written in the current file
	full      bool
	skipped   []string // files over grepMaxFileSize, not searched
}

// add writes h's lines and reports whether the output just became full.
func (o *grepOutput) add(h grepHit) bool {
	if len(h.lines) == 0 {
		return false
	}
	o.files++
	if o.filesOnly {
		o.b.WriteString(h.rel)
		o.b.WriteByte('\n')
		o.full = o.files >= grepMaxFiles
		return o.full
	}
	for i, l := range h.lines {
		if l.match && o.matches == grepMaxLines || o.b.Len() >= grepMaxBytes {
			o.full = true
			return true
		}
		if o.context > 0 && o.b.Len() > 0 && (i == 0 || l.no != o.prevNo+1) {
			o.b.WriteString("--\n")
		}
		sep := byte('-')
		if l.match {
			sep = ':'
			o.matches++
		}
		o.b.WriteString(h.rel)
		o.b.WriteByte(sep)
		o.b.WriteString(strconv.Itoa(l.no))
		o.b.WriteByte(sep)
		o.b.WriteString(l.text)
		o.b.WriteByte('\n')
		o.prevNo = l.no
	}
	if h.more {
		o.full = true
	}
	return o.full
}

// result renders the output for the model.
func (o *grepOutput) result(pattern, where string) Result {
	skipped := ""
	if n := len(o.skipped); n > 0 {
		names := o.skipped
		if n > 5 {
			names = names[:5]
		}
		files := "files"
		if n == 1 {
			files = "file"
		}
		skipped = fmt.Sprintf("(not searched: %d %s over %d MiB: %s; search them with bash, e.g. rg or grep)\n",
			n, files, grepMaxFileSize>>20, strings.Join(names, ", "))
	}
	if o.files == 0 {
		content := fmt.Sprintf("No matches for %s in %s.", pattern, where)
		if skipped != "" {
			content += "\n" + strings.TrimRight(skipped, "\n")
		}
		return Result{Content: content, Note: "grep " + pattern + ": no matches"}
	}
	o.b.WriteString(skipped)
	note := fmt.Sprintf("grep %s: %d matches in %d files", pattern, o.matches, o.files)
	if o.filesOnly {
		note = fmt.Sprintf("grep %s: %d files", pattern, o.files)
	}
	if o.full {
		note += " (capped)"
		if o.filesOnly {
			fmt.Fprintf(&o.b, "(stopped at %d files; narrow the pattern, path or include)\n", o.files)
		} else {
			fmt.Fprintf(&o.b, "(output capped at %d matching lines or %d KB; narrow the pattern, path or include, or use files_only)\n", grepMaxLines, grepMaxBytes>>10)
		}
	}
	return Result{Content: o.b.String(), Note: note}
}
