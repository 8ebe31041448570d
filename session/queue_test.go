package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueKeepsOrderAndKinds(t *testing.T) {
	q := &Queue{dir: filepath.Join(t.TempDir(), "queue", "s1")}
	assert.Nil(t, q.Take(false), "a queue that was never written is empty")
	assert.False(t, q.Waiting())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, q.Put("first", false, now))
	require.NoError(t, q.Put("later", true, now.Add(time.Second)))
	require.NoError(t, q.Put("second", false, now.Add(2*time.Second)))
	require.NoError(t, os.WriteFile(filepath.Join(q.dir, ".tmp-123"), []byte("half written"), 0o644))
	assert.True(t, q.Waiting())

	assert.Equal(t, []string{"first", "second"}, q.Take(false))
	assert.Nil(t, q.Take(false), "taken messages are gone")
	assert.False(t, q.Waiting(), "follow-ups are not steering messages")
	assert.Equal(t, []string{"later"}, q.Take(true))
	ents, err := os.ReadDir(q.dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "a temporary file being written is never taken")
}
