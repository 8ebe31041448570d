package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFork(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	src, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, src, 3, "one by one")                                    // entries 1..3, one commit each
	require.NoError(t, src.Append(ctx, userEntry("a"), userEntry("b"))) // 4, 5 in one commit
	srcRef := sessionRef(src.ID())

	t.Run("at an entry ending a commit", func(t *testing.T) {
		f, err := st.forkAt(ctx, src.ID(), 2)
		require.NoError(t, err)
		assert.NotEqual(t, src.ID(), f.ID())
		assert.Len(t, f.Entries(), 2)
		assert.Equal(t, tb.git(dir, "rev-parse", srcRef+"~2"), tb.git(dir, "rev-parse", sessionRef(f.ID())),
			"the fork points at the existing commit: nothing is copied")
		require.NoError(t, f.Append(ctx, NewEntry(TypeFork, map[string]string{"from": src.ID()}, "")))
		e := f.Entries()[2]
		assert.Equal(t, 3, e.ID)
		assert.Equal(t, 2, e.Parent, "the fork's first entry points at the fork point")
		assert.Equal(t, tb.git(dir, "rev-parse", srcRef+"~2"), tb.git(dir, "merge-base", srcRef, sessionRef(f.ID())),
			"the fork shares its history with the source")
		again, err := st.Open(ctx, src.ID())
		require.NoError(t, err)
		assert.Len(t, again.Entries(), 5, "the source is unchanged")
	})

	t.Run("at the last entry", func(t *testing.T) {
		f, err := st.forkAt(ctx, src.ID(), 0)
		require.NoError(t, err)
		assert.Equal(t, tb.git(dir, "rev-parse", srcRef), tb.git(dir, "rev-parse", sessionRef(f.ID())))
		assert.Len(t, f.Entries(), 5)
	})

	t.Run("inside a batch", func(t *testing.T) {
		f, err := st.forkAt(ctx, src.ID(), 4)
		require.NoError(t, err)
		fref := sessionRef(f.ID())
		assert.Len(t, f.Entries(), 4)
		assert.Equal(t, tb.git(dir, "rev-parse", srcRef+"~1"), tb.git(dir, "rev-parse", fref+"~1"),
			"one commit on top of the batch's parent")
		assert.Equal(t, "fork "+src.ID()+"@4", tb.git(dir, "log", "-1", "--format=%s", fref))
		assert.Contains(t, tb.git(dir, "log", "-1", "--format=%b", fref), "Decode-Entries: 4")
		jsonl, err := f.JSONL(ctx)
		require.NoError(t, err)
		full, err := src.JSONL(ctx)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(full), string(jsonl)))
		assert.Equal(t, 4, strings.Count(string(jsonl), "\n"))
	})

	t.Run("no such entry", func(t *testing.T) {
		_, err := st.forkAt(ctx, src.ID(), 99)
		assert.ErrorContains(t, err, "no entry 99")
	})

	out, err := tb.gitErr(dir, "", "fsck", "--strict", "--no-dangling")
	assert.NoError(t, err, out)
}

func TestForkAcrossChunks(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	src, err := st.Create(ctx)
	require.NoError(t, err)
	big := strings.Repeat("z", 20<<10)
	batch := make([]Entry, 8) // 160 KiB in one commit: three chunks
	for i := range batch {
		batch[i] = userEntry(big)
	}
	require.NoError(t, src.Append(ctx, batch...))
	f, err := st.forkAt(ctx, src.ID(), 4)
	require.NoError(t, err)
	assert.Len(t, f.Entries(), 4)
	src2 := lsTree(tb, dir, sessionRef(src.ID()))
	fork := lsTree(tb, dir, sessionRef(f.ID()))
	require.Len(t, fork, 2)
	assert.Equal(t, src2[0], fork[0], "the full chunk is shared")
	assert.NotEqual(t, src2[1], fork[1], "the chunk holding the fork point is cut after it")
	require.NoError(t, f.Append(ctx, userEntry("next")))
	re, err := st.Open(ctx, f.ID())
	require.NoError(t, err)
	assert.Len(t, re.Entries(), 5)
	assert.Empty(t, re.Problems())
}
