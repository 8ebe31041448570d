package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDs(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	a, err := newID(t0)
	require.NoError(t, err)
	b, err := newID(t0.Add(time.Millisecond))
	require.NoError(t, err)
	assert.Len(t, a, idLen)
	assert.Less(t, a, b, "ids sort by creation")
	assert.Equal(t, strings.ToLower(a), a)
	assert.True(t, validName(a))
	got, ok := idTime(a)
	require.True(t, ok)
	assert.Equal(t, t0, got)
	_, ok = idTime("not-an-id!")
	assert.False(t, ok)
}

func TestResolve(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := 0; i < 4; i++ {
		st.SetClock(func() time.Time { return t0.Add(time.Duration(i) * time.Hour) })
		s, err := st.Create(ctx)
		require.NoError(t, err)
		appendN(t, s, 1, "x")
		ids = append(ids, s.ID())
	}
	// Appending to the oldest makes it the most recently updated, not the newest.
	old, err := st.Open(ctx, ids[0])
	require.NoError(t, err)
	appendN(t, old, 1, "y")

	for ref, want := range map[string]string{
		ids[2]:                  ids[2],
		sessionRef(ids[1]):      ids[1],
		"@":                     ids[3],
		"@~0":                   ids[3],
		"@~1":                   ids[2],
		"@~3":                   ids[0],
		" " + ids[3][:9] + "\n": ids[3],
	} {
		s, err := st.Open(ctx, ref)
		require.NoError(t, err, "ref %q", ref)
		assert.Equal(t, want, s.ID(), "ref %q", ref)
	}

	// The four ids share their first characters (same year); find the
	// longest common prefix to provoke ambiguity.
	p := commonPrefix(ids)
	require.NotEmpty(t, p)
	_, err = st.Open(ctx, p)
	var amb *AmbiguousError
	require.ErrorAs(t, err, &amb)
	assert.ElementsMatch(t, ids, amb.Candidates)
	assert.Contains(t, err.Error(), ids[0])

	for _, ref := range []string{"zzzz", "@~4", "../../HEAD", "a/b"} {
		_, err = st.Open(ctx, ref)
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf, "ref %q", ref)
		assert.Equal(t, []string{ids[3], ids[2], ids[1], ids[0]}, nf.Candidates)
	}
	_, err = st.Open(ctx, "")
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrConflict))
}

func commonPrefix(ids []string) string {
	p := ids[0]
	for _, id := range ids[1:] {
		for !strings.HasPrefix(id, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

func TestResolveEmptyStore(t *testing.T) {
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	_, err := st.Open(ctx, "@")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Contains(t, err.Error(), "no sessions")
}
