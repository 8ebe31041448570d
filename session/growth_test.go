package session

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepositoryGrowth checks that a session costs the repository, once
// packed by `git gc`, no more than a small factor of its JSONL: chunks
// rewritten by every append must delta against each other in the pack.
func TestRepositoryGrowth(t *testing.T) {
	g := measureGrowth(newTestbed(t), 100)
	t.Logf("100 steps: JSONL %d bytes, loose objects %d, after gc %d (%.2fx)", g.jsonl, g.loose, g.packed, float64(g.packed)/float64(g.jsonl))
	assert.Less(t, g.packed, 2*g.jsonl, "after gc the session takes less than twice its JSONL")
	assert.Less(t, g.packed, g.loose, "gc shrinks what appends wrote")
}

// growth is what a session of some steps costs the repository.
type growth struct {
	jsonl  int64 // the session's JSONL
	loose  int64 // objects written, before any gc
	packed int64 // objects after `git gc` (packs and their indexes)
}

// measureGrowth appends steps realistic steps, one commit each (a model
// response calling a tool, the call, its result: ~1.5 KB of varied text),
// then packs the repository with `git gc`.
func measureGrowth(tb *testbed, steps int) growth {
	tb.t.Helper()
	dir := tb.repo()
	gitDir := filepath.Join(dir, ".git")
	before := dirSize(tb.t, filepath.Join(gitDir, "objects"))
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(tb.t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < steps; i++ {
		call := fmt.Sprintf("call_%d", i)
		file := fmt.Sprintf("pkg/%s/%s.go", words(rng, 1), words(rng, 1))
		require.NoError(tb.t, s.Append(ctx,
			NewEntry(TypeAssistant, map[string]any{"message": map[string]any{"role": "assistant", "text": words(rng, 25),
				"calls": []map[string]any{{"id": call, "name": "read", "args": map[string]string{"path": file}}}},
				"usage": map[string]int{"input": 1000 + i*40, "output": 60}, "stop": "tool_use"}, "calls read"),
			NewEntry(TypeToolCall, ToolCallData{CallID: call, Name: "read", Args: []byte(`{"path":"` + file + `"}`), Decision: "allow"}, "read "+file),
			NewEntry(TypeToolResult, map[string]any{"call_id": call, "name": "read", "content": words(rng, 150)}, "read "+file),
		))
	}
	jsonl, err := s.JSONL(ctx)
	require.NoError(tb.t, err)
	g := growth{jsonl: int64(len(jsonl)), loose: dirSize(tb.t, filepath.Join(gitDir, "objects")) - before}
	tb.git(dir, "gc", "-q", "--prune=now")
	g.packed = dirSize(tb.t, filepath.Join(gitDir, "objects"))
	// The repository's own initial commit is in the pack too; take it out.
	g.packed -= min(before, g.packed)
	return g
}

// words returns n words of code-review-like prose drawn from a small
// vocabulary, so that the text compresses about as well as real output.
func words(rng *rand.Rand, n int) string {
	vocab := strings.Fields(`the a to of and in is it for on func return err nil if
		else test file line main package import string int error value config session
		model tool call result read write edit grep glob bash output input context
		struct type var const range map slice append len make go defer select chan`)
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[rng.IntN(len(vocab))]
		if rng.IntN(9) == 0 {
			out[i] += fmt.Sprint(rng.IntN(1000))
		}
	}
	return strings.Join(out, " ")
}

func dirSize(t testing.TB, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	require.NoError(t, err)
	return n
}

// BenchmarkGrowth reports what a 1,000-step session costs the repository
// before and after `git gc`, relative to its JSONL. Run with -benchtime 1x.
func BenchmarkGrowth(b *testing.B) {
	for i := 0; i < b.N; i++ {
		g := measureGrowth(newTestbed(b), 1000)
		b.ReportMetric(float64(g.jsonl)/1e6, "jsonl-MB")
		b.ReportMetric(float64(g.loose)/1e6, "loose-MB")
		b.ReportMetric(float64(g.packed)/1e6, "gc-MB")
		b.ReportMetric(float64(g.packed)/float64(g.jsonl), "gc/jsonl")
	}
}
