package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecideRecordsDecisionsThatFitTheirRequests(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx,
		userEntry("go"),
		NewEntry(TypeApprovalReq, ApprovalRequestData{CallID: "c1", Name: "bash", Kind: WaitApproval, Hash: "h1"}, ""),
		NewEntry(TypeApprovalReq, ApprovalRequestData{CallID: "c2", Name: "ask_user", Kind: WaitQuestion, Hash: "h2"}, ""),
		NewEntry(TypeApprovalReq, ApprovalRequestData{CallID: "c3", Name: "sleep", Kind: WaitTime, Hash: "h3"}, ""),
	))
	allow := Decision{ApprovalData: ApprovalData{CallID: "c1", Hash: "h1", Decision: DecisionAllow}, Note: "allow bash"}

	for name, tc := range map[string]struct {
		d    ApprovalData
		want string
	}{
		"unknown call":        {ApprovalData{CallID: "c9", Hash: "h1", Decision: DecisionAllow}, "no call c9 waits for a decision"},
		"another call's hash": {ApprovalData{CallID: "c1", Hash: "h2", Decision: DecisionAllow}, "bound to another call"},
		"answer to approval":  {ApprovalData{CallID: "c1", Hash: "h1", Decision: DecisionAnswer}, "takes allow or deny"},
		"allow a question":    {ApprovalData{CallID: "c2", Hash: "h2", Decision: DecisionAllow}, "takes an answer"},
		"allow a sleep":       {ApprovalData{CallID: "c3", Hash: "h3", Decision: DecisionAllow}, "waits for time"},
	} {
		err := s.Decide(ctx, allow, Decision{ApprovalData: tc.d})
		assert.ErrorContains(t, err, tc.want, name)
		assert.Len(t, s.Entries(), 4, "%s: nothing is written when one decision does not fit", name)
	}

	answer := Decision{ApprovalData: ApprovalData{CallID: "c2", Hash: "h2", Decision: DecisionAnswer, Answer: "yes"}}
	require.NoError(t, s.Decide(ctx, allow, answer))
	again, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	es := again.Entries()
	require.Len(t, es, 6)
	for i, want := range []ApprovalData{allow.ApprovalData, answer.ApprovalData} {
		e := es[4+i]
		require.Equal(t, TypeApproval, e.Type)
		var got ApprovalData
		require.NoError(t, e.Decode(&got))
		assert.Equal(t, want, got)
	}
	assert.Contains(t, tb.git(dir, "log", "-1", "--format=%s", sessionRef(s.ID())), "allow bash", "the note is in the commit's subject")
}

func TestForkRecordsItsForkEntry(t *testing.T) {
	tb := newTestbed(t)
	st := tb.store(tb.repo())
	src, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, src, 3, "step")

	f, err := st.Fork(ctx, src.ID()[:9], 2, ForkData{Replay: true, Model: "script:x"})
	require.NoError(t, err)
	es := f.Entries()
	require.Len(t, es, 3)
	fork := es[2]
	assert.Equal(t, TypeFork, fork.Type)
	assert.Equal(t, 2, fork.Parent, "the fork entry follows the fork point")
	var d ForkData
	require.NoError(t, fork.Decode(&d))
	assert.Equal(t, ForkData{From: src.ID(), At: 2, Replay: true, Model: "script:x"}, d, "From is the full id a prefix named")
	assert.Equal(t, WriterNone, st.Writer(f.ID()), "the fork is left unlocked")

	_, err = st.Fork(ctx, src.ID(), 9, ForkData{})
	assert.ErrorContains(t, err, "no entry 9")
}
