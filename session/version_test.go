package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rewriteChunk replaces the session's first chunk with edit(its content),
// committed on top of the ref as another writer (or another decode) would.
func (tb *testbed) rewriteChunk(dir, id string, edit func(string) string) {
	tb.t.Helper()
	ref := sessionRef(id)
	old := tb.git(dir, "rev-parse", ref)
	data := tb.git(dir, "cat-file", "blob", ref+":session/000000.jsonl") + "\n"
	blob := tb.gitIn(dir, edit(data), "hash-object", "-w", "--stdin")
	sub := tb.gitIn(dir, fmt.Sprintf("100644 blob %s\t000000.jsonl\n", blob), "mktree")
	root := tb.gitIn(dir, fmt.Sprintf("040000 tree %s\tsession\n", sub), "mktree")
	msg := tb.git(dir, "log", "-1", "--format=%B", ref)
	commit := tb.gitIn(dir, msg, "commit-tree", root, "-p", old)
	tb.git(dir, "update-ref", ref, commit, old)
}

func TestOlderEntriesPassThroughMigrations(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	ctx := context.Background()
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 3, "hello")
	// Entry 2 as a version-0 writer would have written it.
	tb.rewriteChunk(dir, s.ID(), func(c string) string {
		return strings.Replace(c, `{"v":1,"id":2,`, `{"v":0,"id":2,`, 1)
	})

	// A fake 0 → 1 step: the shape change it stands for is an upper-cased text.
	calls := 0
	migrations[0] = func(e Entry) (Entry, error) {
		calls++
		var u UserData
		if err := e.Decode(&u); err != nil {
			return e, err
		}
		e.Data = NewEntry(e.Type, UserData{Text: strings.ToUpper(u.Text)}, "").Data
		return e, nil
	}
	t.Cleanup(func() { delete(migrations, 0) })

	again, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	require.Empty(t, again.Problems())
	es := again.Entries()
	require.Len(t, es, 3)
	assert.Equal(t, 1, calls, "the migration runs for the one version-0 entry")
	for i, want := range []string{"hello", "HELLO", "hello"} {
		var u UserData
		require.NoError(t, es[i].Decode(&u))
		assert.Equal(t, i+1, es[i].ID)
		assert.Equal(t, want, u.Text, "entry %d", es[i].ID)
		assert.Equal(t, Version, es[i].V, "entry %d reads as the current version", es[i].ID)
	}
	// A migration that fails makes that line a problem, not the session.
	migrations[0] = func(e Entry) (Entry, error) { return e, errors.New("no way") }
	again, err = st.Open(ctx, s.ID())
	require.NoError(t, err)
	require.NotEmpty(t, again.Problems())
	assert.Equal(t, "session/000000.jsonl:2: migrate entry 2 from schema version 0: no way", again.Problems()[0].Position())
	assert.Len(t, again.Entries(), 2)
}

func TestNewerEntryIsRefused(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	ctx := context.Background()
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 3, "hello")
	tb.rewriteChunk(dir, s.ID(), func(c string) string {
		return strings.Replace(c, `{"v":1,"id":3,`, fmt.Sprintf(`{"v":%d,"id":3,`, Version+1), 1)
	})
	tip := tb.git(dir, "rev-parse", sessionRef(s.ID()))

	for name, open := range map[string]func(context.Context, string) (*Session, error){
		"Open": st.Open, "OpenTail": st.OpenTail,
	} {
		_, err := open(ctx, s.ID())
		var ve *VersionError
		require.ErrorAs(t, err, &ve, name)
		assert.Equal(t, VersionError{Session: s.ID(), Entry: 3, Version: Version + 1}, *ve, name)
		assert.Contains(t, err.Error(), "upgrade decode", name)
	}
	_, err = st.Fork(ctx, s.ID(), 0, ForkData{})
	require.ErrorAs(t, err, new(*VersionError), "a fork reads its source")
	assert.Equal(t, tip, tb.git(dir, "rev-parse", sessionRef(s.ID())), "the session is left as it is")
}
