// Package storetest is the one conformance suite every implementation of
// session.Sessions passes (the git store and session.Memory), in the way
// git-bug runs one suite over each repository type: what commands and the
// agent rely on (numbering, conflicts, locks, resolution, listing, forks,
// decisions) is checked once, against each.
package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// Run runs the suite; newStore returns an empty store for each subtest.
func Run(t *testing.T, newStore func(t *testing.T) session.Sessions) {
	for _, c := range []struct {
		name string
		test func(*testing.T, session.Sessions)
	}{
		{"CreateAppendOpen", testCreateAppendOpen},
		{"StaleAppendConflicts", testStaleAppendConflicts},
		{"OneWriterAtATime", testOneWriterAtATime},
		{"ResolveAndList", testResolveAndList},
		{"Status", testStatus},
		{"Fork", testFork},
		{"Decide", testDecide},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

func user(text string) session.Entry {
	return session.NewEntry(session.TypeUser, session.UserData{Text: text}, "")
}

func start(model string) session.Entry {
	return session.NewEntry(session.TypeStart, session.StartData{Model: model, Command: "run"}, "")
}

func end(st session.Status) session.Entry {
	return session.NewEntry(session.TypeEnd, session.EndData{Status: st}, "")
}

// texts returns the user texts of es.
func texts(t *testing.T, es []session.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Type == session.TypeUser {
			var u session.UserData
			require.NoError(t, e.Decode(&u))
			out = append(out, u.Text)
		}
	}
	return out
}

// newSession creates a session holding es, a few milliseconds after the
// one before, so that "@" and "@~N" have an order to find.
func newSession(t *testing.T, st session.Sessions, es ...session.Entry) session.Log {
	t.Helper()
	time.Sleep(3 * time.Millisecond)
	l, err := st.Create(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Append(context.Background(), es...))
	return l
}

func testCreateAppendOpen(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	l, err := st.Create(ctx)
	require.NoError(t, err)
	require.Len(t, l.ID(), 11, "an id is 11 characters")
	_, err = st.Open(ctx, l.ID())
	require.ErrorAs(t, err, new(*session.NotFoundError), "a session with no entry is not there yet")
	infos, err := st.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)

	require.NoError(t, l.Append(ctx, start("m1"), user("a")))
	require.NoError(t, l.Append(ctx, user("b")))
	require.NoError(t, l.Append(ctx))
	es := l.Entries()
	require.Len(t, es, 3)
	for i, e := range es {
		assert.Equal(t, session.Version, e.V)
		assert.Equal(t, i+1, e.ID, "ids count from 1")
		assert.Equal(t, i, e.Parent, "each entry follows the one before")
		assert.False(t, e.TS.IsZero())
		assert.Equal(t, time.UTC, e.TS.Location())
	}
	stamped := user("c")
	stamped.TS = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	require.NoError(t, l.Append(ctx, stamped))

	for _, ref := range []string{l.ID(), l.ID()[:10], "@", "refs/decode/sessions/" + l.ID()} {
		again, err := st.Open(ctx, ref)
		require.NoError(t, err, ref)
		assert.Equal(t, l.ID(), again.ID())
		got := again.Entries()
		require.Len(t, got, 4, ref)
		assert.Equal(t, []string{"a", "b", "c"}, texts(t, got))
		assert.True(t, got[3].TS.Equal(stamped.TS), "a given time is kept (in UTC)")
		for i := range got {
			assert.Equal(t, es[min(i, 2)].V, got[i].V)
			assert.Equal(t, i+1, got[i].ID)
		}
	}
	entries := l.Entries()
	entries[0].Type = "changed"
	assert.Equal(t, session.TypeStart, l.Entries()[0].Type, "Entries returns a copy")
	_, err = st.Open(ctx, "")
	assert.Error(t, err, "an empty reference")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, l.Append(cancelled, user("late")), context.Canceled)
	assert.Len(t, l.Entries(), 4, "a cancelled append adds nothing")
}

func testStaleAppendConflicts(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	l := newSession(t, st, start("m"), user("one"))
	a, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	b, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	require.NoError(t, a.Append(ctx, user("from a")))
	err = b.Append(ctx, user("from b"))
	require.ErrorIs(t, err, session.ErrConflict, "b read the session before a moved it")
	assert.Len(t, b.Entries(), 2, "the losing append changes nothing")
	again, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "from a"}, texts(t, again.Entries()))
}

func testOneWriterAtATime(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	l := newSession(t, st, start("m"), user("one"))
	a, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	b, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	require.NoError(t, a.Lock())
	require.NoError(t, a.Lock(), "locking twice is a no-op")
	require.ErrorIs(t, b.Lock(), session.ErrConflict, "a holds the lock")
	require.NoError(t, a.Append(ctx, user("two")))
	require.NoError(t, a.Unlock())
	require.NoError(t, a.Unlock(), "unlocking twice is a no-op")

	require.NoError(t, b.Lock(), "released")
	assert.Equal(t, []string{"one", "two"}, texts(t, b.Entries()), "taking the lock reads what moved")
	require.NoError(t, b.Append(ctx, user("three")), "and the holder appends after it")
	require.NoError(t, b.Unlock())
}

func testResolveAndList(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	_, err := st.Resolve(ctx, "@")
	var nf *session.NotFoundError
	require.ErrorAs(t, err, &nf, "no sessions")
	assert.Empty(t, nf.Candidates)

	first := newSession(t, st, start("m-first"), user("first task"))
	second := newSession(t, st, start("m-second"), user("second task"), user("more"))
	third := newSession(t, st, user("third task"))
	for ref, want := range map[string]string{
		"@": third.ID(), "@~": second.ID(), "@~1": second.ID(), "@~2": first.ID(),
		first.ID(): first.ID(), second.ID()[:10]: second.ID(), " " + third.ID() + " ": third.ID(),
	} {
		id, err := st.Resolve(ctx, ref)
		require.NoError(t, err, ref)
		assert.Equal(t, want, id, ref)
	}
	_, err = st.Resolve(ctx, "@~3")
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, []string{third.ID(), second.ID(), first.ID()}, nf.Candidates, "the newest sessions are named")
	_, err = st.Resolve(ctx, "zzzzzzzzzzz")
	require.ErrorAs(t, err, new(*session.NotFoundError))
	if p := commonPrefix(first.ID(), second.ID(), third.ID()); p != "" {
		_, err = st.Resolve(ctx, p)
		var amb *session.AmbiguousError
		require.ErrorAs(t, err, &amb, "prefix %q", p)
		assert.ElementsMatch(t, []string{first.ID(), second.ID(), third.ID()}, amb.Candidates)
	}

	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	ids := []string{infos[0].ID, infos[1].ID, infos[2].ID}
	assert.Equal(t, []string{third.ID(), second.ID(), first.ID()}, ids, "newest first")
	in := infos[1]
	assert.Equal(t, "m-second", in.Model)
	assert.Equal(t, "second task", in.Title, "the title is the first prompt")
	assert.Equal(t, 3, in.Entries)
	assert.Equal(t, 2, in.Turns)
	assert.False(t, in.Created.IsZero())
	assert.True(t, infos[0].Created.After(infos[2].Created) || infos[0].Created.Equal(infos[2].Created))
	assert.Empty(t, in.Damage)
	l, err := st.Open(ctx, second.ID())
	require.NoError(t, err)
	got := l.Info()
	assert.Equal(t, in.ID, got.ID)
	assert.Equal(t, in.Title, got.Title)
	assert.Equal(t, in.Entries, got.Entries)
	assert.Equal(t, in.Status, got.Status)
}

func commonPrefix(ids ...string) string {
	p := ids[0]
	for _, id := range ids[1:] {
		for !strings.HasPrefix(id, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

func testStatus(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	done := newSession(t, st, start("m"), user("x"), end(session.StatusDone))
	paused := newSession(t, st, start("m"), user("x"), end(session.StatusPaused))
	running := newSession(t, st, start("m"), user("x"))
	status := func() map[string]session.Status {
		infos, err := st.List(ctx)
		require.NoError(t, err)
		out := map[string]session.Status{}
		for _, in := range infos {
			out[in.ID] = in.Status
		}
		return out
	}
	got := status()
	assert.Equal(t, session.StatusDone, got[done.ID()])
	assert.Equal(t, session.StatusPaused, got[paused.ID()])
	assert.Equal(t, session.StatusCrashed, got[running.ID()], "running with no writer: its writer is gone")

	w, err := st.Open(ctx, running.ID())
	require.NoError(t, err)
	require.NoError(t, w.Lock())
	assert.Equal(t, session.StatusRunning, status()[running.ID()], "running while its writer holds it")
	assert.Equal(t, session.StatusRunning, w.Info().Status)
	require.NoError(t, w.Append(ctx, end(session.StatusDone)))
	require.NoError(t, w.Unlock())
	assert.Equal(t, session.StatusDone, status()[running.ID()])
}

func testFork(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	src := newSession(t, st, start("m"), user("one"), user("two"), user("three"))

	time.Sleep(3 * time.Millisecond) // ids order by the millisecond they were made in
	f, err := st.Fork(ctx, src.ID()[:10], 3, session.ForkData{Model: "other"})
	require.NoError(t, err)
	assert.NotEqual(t, src.ID(), f.ID())
	es := f.Entries()
	require.Len(t, es, 4)
	assert.Equal(t, []string{"one", "two"}, texts(t, es), "the entries up to the fork point")
	fork := es[3]
	assert.Equal(t, session.TypeFork, fork.Type)
	assert.Equal(t, 4, fork.ID)
	assert.Equal(t, 3, fork.Parent, "the fork entry follows the fork point")
	var d session.ForkData
	require.NoError(t, fork.Decode(&d))
	assert.Equal(t, session.ForkData{From: src.ID(), At: 3, Model: "other"}, d)

	again, err := st.Open(ctx, f.ID())
	require.NoError(t, err)
	assert.Len(t, again.Entries(), 4, "the fork is stored")
	orig, err := st.Open(ctx, src.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two", "three"}, texts(t, orig.Entries()), "the source is unchanged")
	newest, err := st.Resolve(ctx, "@")
	require.NoError(t, err)
	assert.Equal(t, f.ID(), newest, "a fork is newer than its source")
	require.NoError(t, again.Lock(), "a fork is left unlocked")
	require.NoError(t, again.Unlock())

	all, err := st.Fork(ctx, src.ID(), 0, session.ForkData{Replay: true})
	require.NoError(t, err)
	es = all.Entries()
	require.Len(t, es, 5)
	var d2 session.ForkData
	require.NoError(t, es[4].Decode(&d2))
	assert.Equal(t, session.ForkData{From: src.ID(), At: 4, Replay: true}, d2, "at 0 is after the last entry")

	_, err = st.Fork(ctx, src.ID(), 99, session.ForkData{})
	assert.ErrorContains(t, err, "no entry 99")
	_, err = st.Fork(ctx, "zzzzzzzzzzz", 0, session.ForkData{})
	assert.ErrorAs(t, err, new(*session.NotFoundError))
	infos, err := st.List(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, 3, "the failed forks made nothing")
}

func testDecide(t *testing.T, st session.Sessions) {
	ctx := context.Background()
	req := func(call, kind string) session.Entry {
		return session.NewEntry(session.TypeApprovalReq, session.ApprovalRequestData{CallID: call, Name: "bash", Kind: kind, Hash: "h-" + call}, "")
	}
	l := newSession(t, st, start("m"), user("go"), req("c1", session.WaitApproval), req("c2", session.WaitQuestion), end(session.StatusPaused))
	w, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	require.NoError(t, w.Lock())
	defer w.Unlock()

	allow := session.Decision{ApprovalData: session.ApprovalData{CallID: "c1", Hash: "h-c1", Decision: session.DecisionAllow}}
	for _, bad := range []session.ApprovalData{
		{CallID: "c9", Hash: "h-c9", Decision: session.DecisionAllow},
		{CallID: "c1", Hash: "h-c2", Decision: session.DecisionAllow},
		{CallID: "c2", Hash: "h-c2", Decision: session.DecisionDeny},
	} {
		err := w.Decide(ctx, allow, session.Decision{ApprovalData: bad})
		assert.Error(t, err, "%+v", bad)
	}
	assert.Len(t, w.Entries(), 5, "nothing is written when one decision does not fit")
	assert.Error(t, w.Decide(ctx), "no decision")

	answer := session.Decision{ApprovalData: session.ApprovalData{CallID: "c2", Hash: "h-c2", Decision: session.DecisionAnswer, Answer: "yes"}}
	require.NoError(t, w.Decide(ctx, allow, answer))
	again, err := st.Open(ctx, l.ID())
	require.NoError(t, err)
	es := again.Entries()
	require.Len(t, es, 7)
	var got []session.ApprovalData
	for _, e := range es[5:] {
		require.Equal(t, session.TypeApproval, e.Type)
		var d session.ApprovalData
		require.NoError(t, e.Decode(&d))
		got = append(got, d)
	}
	assert.Equal(t, []session.ApprovalData{allow.ApprovalData, answer.ApprovalData}, got)
	infos, err := st.List(ctx)
	require.NoError(t, err)
	i := slices.IndexFunc(infos, func(in session.Info) bool { return in.ID == l.ID() })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, session.StatusPaused, infos[i].Status, "a decision leaves the session paused")
}
