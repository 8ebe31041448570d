package commands

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// resumeTarget runs against the in-memory store, the fake the store
// conformance suite keeps honest.
func TestResumeTargetOnMemoryStore(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	_, _, err := resumeTarget(ctx, st, nil)
	require.ErrorAs(t, err, new(*session.NotFoundError), "no session to resume")

	var ids []string
	for range 2 {
		time.Sleep(3 * time.Millisecond)
		l, err := st.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Append(ctx, session.NewEntry(session.TypeUser, session.UserData{Text: "task"}, "")))
		ids = append(ids, l.ID())
	}
	older, newest := ids[0], ids[1]
	for _, c := range []struct {
		args             []string
		wantID, wantText string
	}{
		{nil, newest, ""},
		{[]string{older}, older, ""},
		{[]string{older[:10], "and", "tests"}, older, "and tests"},
		{[]string{"@~1", "go on"}, older, "go on"},
		{[]string{"add", "tests"}, newest, "add tests"}, // prose: a prompt for the newest
	} {
		id, text, err := resumeTarget(ctx, st, c.args)
		require.NoError(t, err, "%q", c.args)
		assert.Equal(t, c.wantID, id, "%q", c.args)
		assert.Equal(t, c.wantText, text, "%q", c.args)
	}
	_, _, err = resumeTarget(ctx, st, []string{"1zz9zz9zz9z", "x"})
	assert.ErrorAs(t, err, new(*session.NotFoundError), "an id-like word that matches nothing is not a prompt")
	_, _, err = resumeTarget(ctx, st, []string{"@~5"})
	assert.ErrorAs(t, err, new(*session.NotFoundError))
}
