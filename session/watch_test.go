package session

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTipsMoveWithAppendsAndPacking(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	ctx := context.Background()
	s, err := st.Create(ctx)
	require.NoError(t, err)
	tip, err := st.TipOf(s.ID())
	require.NoError(t, err)
	assert.Empty(t, tip, "a session with no commit has no tip")
	appendN(t, s, 1, "one")
	first, err := st.TipOf(s.ID())
	require.NoError(t, err)
	assert.Equal(t, s.Tip(), first)
	stamp := st.RefsStamp()
	appendN(t, s, 1, "two")
	assert.NotEqual(t, stamp, st.RefsStamp(), "an append moves the stamp")
	stamp = st.RefsStamp()
	assert.Equal(t, stamp, st.RefsStamp(), "nothing moved, nor does the stamp")
	second, err := st.TipOf(s.ID())
	require.NoError(t, err)
	assert.NotEqual(t, first, second, "the tip moves with each commit")

	tips, err := st.Tips(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{s.ID(): second}, tips)

	// git pack-refs moves the ref into packed-refs: still found.
	tb.git(dir, "pack-refs", "--all")
	assert.NotEqual(t, stamp, st.RefsStamp(), "packing moves the stamp")
	packed, err := st.TipOf(s.ID())
	require.NoError(t, err)
	assert.Equal(t, second, packed)
	tips, err = st.Tips(ctx)
	require.NoError(t, err)
	assert.Equal(t, second, tips[s.ID()])

	missing, err := st.TipOf("nosuchsession")
	require.NoError(t, err)
	assert.Empty(t, missing)
	bad, err := st.TipOf("../HEAD")
	require.NoError(t, err)
	assert.Empty(t, bad, "a name that is no session's reads nothing")
}

// BenchmarkTipOf measures what decode serve's live stream does five times
// a second per open session: read one ref.
func BenchmarkTipOf(b *testing.B) {
	st := benchStore(b)
	manySessions(b, st, 1)
	tips, err := st.Tips(ctx)
	require.NoError(b, err)
	var id string
	for id = range tips {
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if tip, err := st.TipOf(id); err != nil || tip == "" {
			b.Fatal(err, tip)
		}
	}
}

// BenchmarkTips measures the list stream's poll (once a second) over
// 1,000 sessions.
func BenchmarkTips(b *testing.B) {
	st := benchStore(b)
	manySessions(b, st, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if tips, err := st.Tips(ctx); err != nil || len(tips) != 1000 {
			b.Fatal(err, len(tips))
		}
	}
}

// BenchmarkRefsStamp measures the list stream's poll over 1,000 sessions:
// Tips runs only when the stamp moved.
func BenchmarkRefsStamp(b *testing.B) {
	st := benchStore(b)
	manySessions(b, st, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st.RefsStamp() == "" {
			b.Fatal("no stamp")
		}
	}
}
