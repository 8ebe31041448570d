package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLooksLikeRef(t *testing.T) {
	for s, want := range map[string]bool{
		"@":                      true,
		"@~3":                    true,
		"1m8nq3t2ewg":            true,
		"1m8n":                   true,
		"0zzzz9":                 true,
		refPrefix + "1m8nq3t2ew": true,
		"hello":                  false, // l and o are not id characters
		"and":                    false, // id characters, but no digit
		"fix2":                   false, // i is not an id character
		"add tests":              false,
		"":                       false,
		"@x":                     false,
	} {
		assert.Equal(t, want, LooksLikeRef(s), "%q", s)
	}
}

func TestSplitEntryRef(t *testing.T) {
	for s, want := range map[string]struct {
		ref string
		at  int
	}{
		"3f2a":    {"3f2a", 0},
		"3f2a@12": {"3f2a", 12},
		"@":       {"@", 0},
		"@@4":     {"@", 4},
		"@~2":     {"@~2", 0},
		"@~2@7":   {"@~2", 7},
		"x@~2":    {"x@~2", 0},
	} {
		ref, at, err := SplitEntryRef(s)
		require.NoError(t, err, s)
		assert.Equal(t, want.ref, ref, s)
		assert.Equal(t, want.at, at, s)
	}
	for _, s := range []string{"3f2a@", "3f2a@0", "3f2a@-1", "3f2a@x"} {
		_, _, err := SplitEntryRef(s)
		assert.ErrorContains(t, err, "positive number", s)
	}
}

func TestSessionInfoAndResolve(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetClock(fakeClock(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC), time.Second))
	s, err := st.Create(ctx)
	require.NoError(t, err)
	assert.Empty(t, s.Tip(), "no commit before the first append")
	require.NoError(t, s.Append(ctx, NewEntry(TypeStart, StartData{Model: "gemini-2.5-flash"}, ""), userEntry("fix it")))
	require.NoError(t, s.Append(ctx, NewEntry(TypeEnd, EndData{Status: "done"}, "")))
	assert.Equal(t, tb.git(dir, "rev-parse", sessionRef(s.ID())), s.Tip())

	info := s.Info()
	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	listed := infos[0]
	assert.Equal(t, listed.ID, info.ID)
	assert.Equal(t, listed.Created, info.Created)
	assert.Equal(t, listed.Model, info.Model)
	assert.Equal(t, listed.Title, info.Title)
	assert.Equal(t, Status("done"), info.Status)
	assert.Equal(t, 3, info.Entries)
	assert.Equal(t, 1, info.Turns)

	id, err := st.Resolve(ctx, "@")
	require.NoError(t, err)
	assert.Equal(t, s.ID(), id)
	id, err = st.Resolve(ctx, s.ID()[:8])
	require.NoError(t, err)
	assert.Equal(t, s.ID(), id)
	_, err = st.Resolve(ctx, "@~1")
	var nf *NotFoundError
	assert.ErrorAs(t, err, &nf)
}

// TestListManySessions lists enough sessions for List to read their commits
// from several goroutines (run with -race), in order, after gc too.
func TestListManySessions(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	manySessions(t, st, 200)
	check := func(st *Store) {
		infos, err := st.List(ctx)
		require.NoError(t, err)
		require.Len(t, infos, 200)
		for i, in := range infos {
			assert.Equal(t, "gemini-2.5-flash", in.Model)
			assert.Equal(t, 2, in.Entries)
			if i > 0 {
				assert.True(t, in.Created.Before(infos[i-1].Created), "newest first")
			}
		}
		assert.Equal(t, "task number 199: fix the failing test", infos[0].Title)
	}
	check(st)
	tb.git(dir, "gc", "-q", "--prune=now")
	check(tb.store(dir))
}
