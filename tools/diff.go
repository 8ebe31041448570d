package tools

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// textDiff is a line-by-line difference between two texts.
type textDiff struct {
	lines          []diffLine
	added, removed int
}

// diffLine is one line of a diff: op is ' ', '-' or '+' and text keeps its
// newline when it had one.
type diffLine struct {
	op   byte
	text string
}

// lineDiff compares before and after line by line.
func lineDiff(before, after string) textDiff {
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToRunes(before, after)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines)
	var d textDiff
	for _, df := range diffs {
		op := byte(' ')
		switch df.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range strings.SplitAfter(df.Text, "\n") {
			if l == "" {
				continue
			}
			d.lines = append(d.lines, diffLine{op: op, text: l})
			switch op {
			case '-':
				d.removed++
			case '+':
				d.added++
			}
		}
	}
	return d
}

// unified renders the diff in unified format with @@ hunk headers, as git
// and patch read it (go-diff's own patch text is not this format).
func (d textDiff) unified(name string) string {
	if d.added+d.removed == 0 {
		return ""
	}
	// oldAt[i] and newAt[i] count the old and new lines before index i.
	oldAt := make([]int, len(d.lines)+1)
	newAt := make([]int, len(d.lines)+1)
	for i, l := range d.lines {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if l.op != '+' {
			oldAt[i+1]++
		}
		if l.op != '-' {
			newAt[i+1]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	for i, prevEnd := 0, 0; i < len(d.lines); {
		if d.lines[i].op == ' ' {
			i++
			continue
		}
		start, end := max(i-diffContext, prevEnd), d.hunkEnd(i)
		oldLen, newLen := oldAt[end]-oldAt[start], newAt[end]-newAt[start]
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", hunkStart(oldAt[start], oldLen), oldLen, hunkStart(newAt[start], newLen), newLen)
		for _, l := range d.lines[start:end] {
			b.WriteByte(l.op)
			b.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i, prevEnd = end, end
	}
	return b.String()
}

// hunkEnd returns the end of the hunk whose first change is at i: changes
// separated by at most twice the context share a hunk.
func (d textDiff) hunkEnd(i int) int {
	end := i
	for {
		for end < len(d.lines) && d.lines[end].op != ' ' {
			end++
		}
		next := end
		for next < len(d.lines) && d.lines[next].op == ' ' {
			next++
		}
		if next < len(d.lines) && next-end <= 2*diffContext {
			end = next
			continue
		}
		return min(end+diffContext, len(d.lines))
	}
}

// hunkStart is the 1-based start line of a hunk side; an empty side names
// the line before it, as unified diffs do.
func hunkStart(before, n int) int {
	if n == 0 {
		return before
	}
	return before + 1
}
