package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
)

//go:embed edit.md
var editDesc string

// editDiffMax caps the diff an edit returns.
const editDiffMax = 16 << 10

type editArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// editOp is one replacement of an edit or multi_edit call.
type editOp struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

func newEditTool(s *fileState) Tool {
	t := newFuncTool("edit", editDesc, false, func(ctx context.Context, a editArgs) (Result, error) {
		return s.editFile(ctx, a.Path, "edit", []editOp{{a.OldString, a.NewString, a.ReplaceAll}})
	})
	t.preview = func(ctx context.Context, a editArgs) string {
		return s.previewEdit(ctx, a.Path, []editOp{{a.OldString, a.NewString, a.ReplaceAll}})
	}
	return t
}

// previewEdit returns the unified diff ops would make to the file at
// path, changing nothing; "" when they would fail.
func (s *fileState) previewEdit(ctx context.Context, path string, ops []editOp) string {
	abs, err := s.ws.ResolveForWrite(path)
	if err != nil || len(ops) == 0 {
		return ""
	}
	before, err := s.readCurrent(ctx, abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) && ops[0].OldString == "":
		before = nil
	case err != nil || isBinary(before):
		return ""
	}
	after := string(before)
	for _, op := range ops {
		r, err := applyEdit(after, op)
		if err != nil {
			return ""
		}
		after = r.text
	}
	return textChange(s.ws.Rel(abs), string(before), after)
}

// textChange is the unified diff from before to after of the file rel,
// compared without a BOM and with CRLF read as LF, as edits match.
func textChange(rel, before, after string) string {
	bn, _ := normalizeEOL(strings.TrimPrefix(before, bomString))
	an, _ := normalizeEOL(strings.TrimPrefix(after, bomString))
	return lineDiff(bn, an).unified(rel)
}

// editFile applies ops in order to the file at path and writes it only if
// all of them apply. An empty old_string in the first op creates a file that
// does not exist yet (or fills an empty one).
func (s *fileState) editFile(ctx context.Context, path, tool string, ops []editOp) (Result, error) {
	abs, err := s.ws.ResolveForWrite(path)
	if err != nil {
		return errResult(tool+": refused", err.Error()), nil
	}
	rel := s.ws.Rel(abs)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	before, old, res, ok := s.editable(ctx, abs, rel, tool, ops)
	if !ok {
		return res, nil
	}
	after, count, how := string(before), 0, ""
	for i, op := range ops {
		r, err := applyEdit(after, op)
		if err != nil {
			msg := fmt.Sprintf("%s: %v", rel, err)
			if len(ops) > 1 {
				msg = fmt.Sprintf("edit %d of %d failed: %s. No edit was applied.", i+1, len(ops), msg)
			}
			return errResult(tool+" "+rel+": failed", msg), nil
		}
		after, count = r.text, count+r.count
		if r.how != "" {
			how = r.how
		}
	}
	if after == string(before) {
		return errResult(tool+" "+rel+": no change", rel+": the edit leaves the file unchanged."), nil
	}
	if err := s.writeOut(ctx, abs, []byte(after), old); err != nil {
		return errResult(tool+" "+rel+": failed", fmt.Sprintf("write %s: %v", rel, err)), nil
	}
	res = editResult(rel, string(before), after, count, how, old == nil)
	if fi, err := os.Stat(abs); err == nil {
		res.Seen = s.markRead(abs, fi)
	}
	return res, nil
}

// editable reads the file an edit applies to, after the read-before-edit
// check; a missing file is empty when the first op creates it.
func (s *fileState) editable(ctx context.Context, abs, rel, tool string, ops []editOp) ([]byte, fs.FileInfo, Result, bool) {
	old, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if ops[0].OldString == "" {
			return nil, nil, Result{}, true
		}
		return nil, nil, errResult(tool+" "+rel+": not found", rel+" does not exist; use write to create a file."), false
	}
	if err != nil {
		return nil, nil, errResult(tool+" "+rel+": failed", err.Error()), false
	}
	before, err := s.readCurrent(ctx, abs)
	if err != nil {
		return nil, nil, errResult(tool+" "+rel+": failed", err.Error()), false
	}
	if isBinary(before) {
		return nil, nil, errResult(tool+" "+rel+": binary", rel+" is a binary file; edit changes text files only."), false
	}
	if msg := s.checkFresh(abs, old); msg != "" {
		return nil, nil, errResult(tool+" "+rel+": not read", msg), false
	}
	return before, old, Result{}, true
}

// editResult reports a successful edit with its unified diff.
func editResult(rel, before, after string, count int, how string, created bool) Result {
	bn, _ := normalizeEOL(strings.TrimPrefix(before, bomString))
	an, _ := normalizeEOL(strings.TrimPrefix(after, bomString))
	d := lineDiff(bn, an)
	verb := "Edited"
	if created {
		verb = "Created"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d replacement", verb, rel, count)
	if count != 1 {
		b.WriteByte('s')
	}
	if how != "" {
		fmt.Fprintf(&b, " (matched %s)", how)
	}
	b.WriteString(".\n")
	diff := d.unified(rel)
	if len(diff) > editDiffMax {
		diff = cutString(diff, editDiffMax) + "\n(diff cut; read the file to see the result)\n"
	}
	b.WriteString(diff)
	return Result{Content: b.String(), Note: fmt.Sprintf("edited %s (+%d -%d)", rel, d.added, d.removed)}
}

const bomString = "\ufeff"

// editApplied is the outcome of one op: the new file text, how many places
// changed, and how the match was found when it was not exact.
type editApplied struct {
	text  string
	count int
	how   string
}

// span is a match in normalised text and what replaces it.
type span struct {
	start, end int
	repl       string
}

// applyEdit applies op to content. Matching happens on the text without a
// BOM and with CRLF read as LF; the replacement is spliced into the original
// bytes, so the BOM and every line ending outside the match stay as they
// were, and the new text takes the file's dominant line ending.
func applyEdit(content string, op editOp) (editApplied, error) {
	body, hadBOM := strings.CutPrefix(content, bomString)
	norm, crs := normalizeEOL(body)
	old, _ := normalizeEOL(strings.TrimPrefix(op.OldString, bomString))
	repl, _ := normalizeEOL(strings.TrimPrefix(op.NewString, bomString))
	if old == repl {
		return editApplied{}, errors.New("old_string and new_string are the same; nothing to change")
	}
	var spans []span
	var how string
	switch {
	case old == "" && norm == "":
		spans = []span{{0, 0, repl}}
	case old == "":
		return editApplied{}, errors.New("old_string is empty but the file is not; give the text to replace, or use write to replace the whole file")
	default:
		var err error
		if spans, how, err = findMatches(norm, old, repl, op.ReplaceAll); err != nil {
			return editApplied{}, err
		}
	}
	eol := "\n"
	if 2*len(crs) > strings.Count(norm, "\n") {
		eol = "\r\n"
	}
	var b strings.Builder
	if hadBOM {
		b.WriteString(bomString)
	}
	prev := 0
	for _, sp := range spans {
		start, end := origIndex(sp.start, crs), origIndex(sp.end, crs)
		b.WriteString(body[prev:start])
		b.WriteString(strings.ReplaceAll(sp.repl, "\n", eol))
		prev = end
	}
	b.WriteString(body[prev:])
	return editApplied{text: b.String(), count: len(spans), how: how}, nil
}

// normalizeEOL turns CRLF into LF and returns, for every LF that had a CR,
// its index in the result, ascending.
func normalizeEOL(s string) (string, []int) {
	if !strings.Contains(s, "\r\n") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	var crs []int
	for {
		i := strings.Index(s, "\r\n")
		if i < 0 {
			b.WriteString(s)
			return b.String(), crs
		}
		b.WriteString(s[:i])
		crs = append(crs, b.Len())
		b.WriteByte('\n')
		s = s[i+2:]
	}
}

// origIndex maps index i of normalised text back to the original text: each
// removed CR before i shifts it by one.
func origIndex(i int, crs []int) int {
	return i + sort.SearchInts(crs, i)
}

// findMatches finds where old occurs in text: exactly, or failing that line
// by line ignoring trailing whitespace, or failing that ignoring indentation
// too (the replacement then takes the file's indentation). Without all, the
// match must be unique.
func findMatches(text, old, repl string, all bool) ([]span, string, error) {
	var starts []int
	for i := 0; ; {
		j := strings.Index(text[i:], old)
		if j < 0 {
			break
		}
		starts = append(starts, i+j)
		i += j + len(old)
	}
	if len(starts) > 0 {
		if len(starts) > 1 && !all {
			return nil, "", fmt.Errorf("old_string matches %d places (lines %s); add surrounding lines to make it unique, or set replace_all to change every one", len(starts), lineList(text, starts))
		}
		spans := make([]span, len(starts))
		for i, st := range starts {
			spans[i] = span{st, st + len(old), repl}
		}
		return spans, "", nil
	}
	for _, lv := range []looseLevel{trailingSpace, anyIndent} {
		spans := findLoose(text, old, repl, lv)
		switch {
		case len(spans) == 1 || len(spans) > 1 && all:
			return spans, lv.String(), nil
		case len(spans) > 1:
			starts := make([]int, len(spans))
			for i, sp := range spans {
				starts[i] = sp.start
			}
			return nil, "", fmt.Errorf("old_string is not in the file exactly, and %s it matches %d places (lines %s); copy the text exactly as read, with more surrounding lines", lv, len(spans), lineList(text, starts))
		}
	}
	return nil, "", notFound(text, old)
}

// notFound explains a failed match, pointing at where the first line of
// old_string appears, if it does.
func notFound(text, old string) error {
	msg := "old_string was not found in the file. It must match the file exactly, including whitespace; read the file again and copy the text"
	first := ""
	for l := range strings.SplitSeq(old, "\n") {
		if first = strings.TrimSpace(l); first != "" {
			break
		}
	}
	if first == "" {
		return errors.New(msg)
	}
	var starts []int
	for i := 0; len(starts) < 5; {
		j := strings.Index(text[i:], first)
		if j < 0 {
			break
		}
		starts = append(starts, i+j)
		i += j + len(first)
	}
	if len(starts) > 0 {
		msg += fmt.Sprintf(" (its first line appears at line %s)", lineList(text, starts))
	}
	return errors.New(msg)
}

// lineList formats the 1-based line numbers of the offsets, ascending.
func lineList(text string, offsets []int) string {
	var b strings.Builder
	line, prev := 1, 0
	for i, off := range offsets {
		if i == 10 {
			b.WriteString(", ...")
			break
		}
		line += strings.Count(text[prev:off], "\n")
		prev = off
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(line))
	}
	return b.String()
}

// looseLevel is how far a fallback match may stray from the exact text.
type looseLevel int

const (
	trailingSpace looseLevel = iota + 1 // lines equal once trailing blanks are cut
	anyIndent                           // lines equal once trimmed at both ends
)

func (lv looseLevel) String() string {
	if lv == trailingSpace {
		return "ignoring trailing whitespace"
	}
	return "ignoring indentation"
}

func (lv looseLevel) key(line string) string {
	if lv == trailingSpace {
		return strings.TrimRight(line, " \t")
	}
	return strings.TrimSpace(line)
}

// findLoose finds the runs of whole lines of text that equal old's lines at
// level lv, without overlap.
func findLoose(text, old, repl string, lv looseLevel) []span {
	oldBody, trailingNL := strings.CutSuffix(old, "\n")
	oldLines := strings.Split(oldBody, "\n")
	oldKeys := make([]string, len(oldLines))
	first := -1 // first non-blank line of old, whose indentation counts
	for k, l := range oldLines {
		oldKeys[k] = lv.key(l)
		if first < 0 && strings.TrimSpace(l) != "" {
			first = k
		}
	}
	starts := []int{0}
	for i := range len(text) {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineEnd := func(i int) int {
		if i+1 < len(starts) {
			return starts[i+1] - 1
		}
		return len(text)
	}
	keys := make([]string, len(starts))
	for i := range starts {
		keys[i] = lv.key(text[starts[i]:lineEnd(i)])
	}
	var spans []span
	for i := 0; i+len(oldKeys) <= len(keys); {
		if !equalKeys(keys[i:i+len(oldKeys)], oldKeys) {
			i++
			continue
		}
		end := lineEnd(i + len(oldKeys) - 1)
		if trailingNL && end < len(text) {
			end++
		}
		r := repl
		if lv == anyIndent && first >= 0 {
			depths := map[string]string{}
			for k, l := range oldLines {
				if _, seen := depths[indentOf(l)]; !seen && strings.TrimSpace(l) != "" {
					depths[indentOf(l)] = indentOf(text[starts[i+k]:lineEnd(i+k)])
				}
			}
			r = reindent(repl, indentOf(oldLines[first]), indentOf(text[starts[i+first]:]), depths)
		}
		spans = append(spans, span{starts[i], end, r})
		i += len(oldKeys)
	}
	return spans
}

func equalKeys(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// indentOf returns the leading blanks of s.
func indentOf(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// reindent moves the lines of s from indentation from to indentation to,
// so a replacement written at the wrong depth lands at the file's. A line at
// a depth old had takes the depth of the file's line matched there (depths),
// so a closing brace written shallower than the first line stays where the
// file has it; a line deeper than from keeps its extra indentation; any other
// line is left alone.
func reindent(s, from, to string, depths map[string]string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := indentOf(l)
		if d, ok := depths[ind]; ok {
			lines[i] = d + l[len(ind):]
		} else if rest, ok := strings.CutPrefix(l, from); ok {
			lines[i] = to + rest
		}
	}
	return strings.Join(lines, "\n")
}
