package tools

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnifiedDiffFormat(t *testing.T) {
	var before strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&before, "l%d\n", i)
	}
	after := strings.Replace(before.String(), "l2\n", "two\n", 1)
	after = strings.Replace(after, "l18\n", "", 1)
	d := lineDiff(before.String(), after)
	assert.Equal(t, 1, d.added)
	assert.Equal(t, 2, d.removed)
	assert.Equal(t, "--- a/f\n+++ b/f\n"+
		"@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n l4\n l5\n"+
		"@@ -15,6 +15,5 @@\n l15\n l16\n l17\n-l18\n l19\n l20\n",
		d.unified("f"))

	assert.Equal(t, "", lineDiff("same\n", "same\n").unified("f"))
	assert.Equal(t, "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+new\n", lineDiff("", "new\n").unified("f"))
	assert.Equal(t, "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
		lineDiff("a", "b").unified("f"))
}

// TestUnifiedDiffApplies checks random edits: applying the unified diff to
// the old text must give the new text.
func TestUnifiedDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		var lines []string
		for range rng.IntN(40) {
			lines = append(lines, "v"+strconv.Itoa(rng.IntN(8))+"\n")
		}
		before := strings.Join(lines, "")
		for range rng.IntN(6) + 1 {
			i := rng.IntN(len(lines) + 1)
			switch rng.IntN(3) {
			case 0:
				lines = append(lines[:i], append([]string{"new" + strconv.Itoa(round) + "\n"}, lines[i:]...)...)
			case 1:
				if i < len(lines) {
					lines = append(lines[:i], lines[i+1:]...)
				}
			case 2:
				if i < len(lines) {
					lines[i] = "changed\n"
				}
			}
		}
		after := strings.Join(lines, "")
		got, err := applyUnified(before, lineDiff(before, after).unified("f"))
		require.NoError(t, err, "round %d", round)
		require.Equal(t, after, got, "round %d", round)
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$`)

// applyUnified applies a unified diff of newline-terminated lines, checking
// every header count and context line.
func applyUnified(old, diff string) (string, error) {
	if diff == "" {
		return old, nil
	}
	src := strings.SplitAfter(old, "\n")
	if src[len(src)-1] == "" {
		src = src[:len(src)-1]
	}
	lines := strings.SplitAfter(diff, "\n")[2:]
	var out []string
	at := 0 // next line of src to copy
	for i := 0; i < len(lines) && lines[i] != ""; {
		m := hunkHeader.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
		if m == nil {
			return "", fmt.Errorf("bad header %q", lines[i])
		}
		oldStart, _ := strconv.Atoi(m[1])
		oldLen, _ := strconv.Atoi(m[2])
		newLen, _ := strconv.Atoi(m[4])
		if oldLen > 0 {
			oldStart--
		}
		out = append(out, src[at:oldStart]...)
		at = oldStart
		i++
		seenOld, seenNew := 0, 0
		for ; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@"); i++ {
			op, text := lines[i][0], lines[i][1:]
			if op != '+' {
				if at >= len(src) || src[at] != text {
					return "", fmt.Errorf("context mismatch at %d: %q", at, text)
				}
				at++
				seenOld++
			}
			if op != '-' {
				out = append(out, text)
				seenNew++
			}
		}
		if seenOld != oldLen || seenNew != newLen {
			return "", fmt.Errorf("hunk counts %d,%d but has %d,%d", oldLen, newLen, seenOld, seenNew)
		}
	}
	return strings.Join(append(out, src[at:]...), ""), nil
}
