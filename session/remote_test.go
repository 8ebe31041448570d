package session

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushAndFetchSessions(t *testing.T) {
	tb := newTestbed(t)
	a := tb.repo()
	sa := tb.store(a)
	s, err := sa.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 3, "shared")

	remote := filepath.Join(t.TempDir(), "remote.git")
	tb.git(a, "init", "-q", "--bare", remote)
	tb.git(a, "push", "-q", remote, "refs/decode/*:refs/decode/*")

	b := filepath.Join(t.TempDir(), "b")
	tb.git(a, "clone", "-q", remote, b)
	sb := tb.store(b)
	infos, err := sb.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos, "a default clone does not fetch refs/decode")
	tb.git(b, "fetch", "-q", "origin", "refs/decode/*:refs/decode/*")

	got, err := sb.Open(ctx, "@")
	require.NoError(t, err)
	assert.Equal(t, s.ID(), got.ID())
	require.NoError(t, got.Append(ctx, userEntry("from b")))
	assert.Len(t, got.Entries(), 4)

	tb.git(b, "push", "-q", "origin", "refs/decode/*:refs/decode/*")
	tb.git(a, "fetch", "-q", remote, "refs/decode/*:refs/decode/*")
	back, err := sa.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.Len(t, back.Entries(), 4, "the session went there and back")
	assert.ErrorIs(t, s.Append(ctx, userEntry("stale")), ErrConflict, "the fetch moved the ref under the stale session")
}
