package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenTailReadsFromTheLastCompaction(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	big := strings.Repeat("z", 20<<10)
	require.NoError(t, s.Append(ctx, NewEntry(TypeStart, StartData{Model: "script:x"}, ""), userEntry("the task")))
	for range 30 { // ten chunks of three entries
		require.NoError(t, s.Append(ctx, userEntry(big)))
	}
	short, err := st.OpenTail(ctx, s.ID())
	require.NoError(t, err)
	assert.False(t, short.Partial(), "never compacted: read whole")
	assert.Len(t, short.Entries(), 32)

	// A compaction keeping entries 28 on, then more entries.
	require.NoError(t, s.Append(ctx, NewEntry(TypeCompaction, CompactionData{FirstKept: 28, Trigger: "threshold"}, "")))
	for range 4 {
		require.NoError(t, s.Append(ctx, userEntry(big)))
	}
	tail, err := st.OpenTail(ctx, s.ID())
	require.NoError(t, err)
	assert.True(t, tail.Partial())
	var ids []int
	for _, e := range tail.Entries() {
		ids = append(ids, e.ID)
	}
	require.NotEmpty(t, ids)
	assert.Equal(t, []int{1, 2, 3}, ids[:3], "the first chunk: start, task")
	assert.Contains(t, ids, 28, "the first kept entry")
	assert.NotContains(t, ids, 10, "a folded entry in the middle is not read")
	assert.Equal(t, 37, ids[len(ids)-1])
	assert.Empty(t, tail.Problems(), "skipping is not a problem")

	// Appending to it continues the session as a whole.
	require.NoError(t, tail.Lock())
	require.NoError(t, tail.Append(ctx, userEntry("after")))
	require.NoError(t, tail.Unlock())
	full, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.Len(t, full.Entries(), 38)
	assert.Empty(t, full.Problems())
	assert.Equal(t, 38, full.Info().Entries, "the trailers still count every entry")
	data, err := tail.JSONL(ctx)
	require.NoError(t, err)
	assert.Equal(t, 38, strings.Count(string(data), "\n"), "JSONL is the whole session")
}
