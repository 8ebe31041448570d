package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// fakeSnaps returns the trees it is given, one per snapshot, and counts
// the snapshots it was asked for.
type fakeSnaps struct {
	trees []string
	n     int
	err   error
}

func (f *fakeSnaps) Snapshot(context.Context) (session.SnapshotData, error) {
	if f.err != nil {
		return session.SnapshotData{}, f.err
	}
	t := f.trees[min(f.n, len(f.trees)-1)]
	f.n++
	return session.SnapshotData{Tree: t}, nil
}

func snapKinds(t *testing.T, es []session.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Type == session.TypeSnapshot {
			var d session.SnapshotData
			require.NoError(t, e.Decode(&d))
			out = append(out, fmt.Sprintf("%s %s %s", d.Kind, d.CallID, d.Tree))
		}
	}
	return out
}

func TestSnapshotsAroundCallsThatMayChangeFiles(t *testing.T) {
	log := &recLog{}
	reader := &fakeTool{name: "read", readOnly: true, out: "contents"}
	writer := &fakeTool{name: "write", out: "written"}
	snaps := &fakeSnaps{trees: []string{"t0", "t1", "t2", "t2", "t3"}}
	m := &fakeModel{responses: []llm.Response{
		say("read only", call("c1", "read", `{}`)),
		say("two writes", call("c2", "write", `{}`), call("c3", "read", `{}`), call("c4", "write", `{}`)),
		say("one more", call("c5", "write", `{}`)),
		say("done"),
	}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(reader, writer), Gate: allowAll, Log: log, Snapshots: snaps}, "go")
	require.NoError(t, err)
	// The read-only step takes none; the second step one before its first
	// write and one after each; the third step's before snapshot equals the
	// last one recorded (t2), so it is not recorded again.
	assert.Equal(t, 5, snaps.n)
	assert.Equal(t, []string{"before c2 t0", "after c2 t1", "after c4 t2", "after c5 t3"}, snapKinds(t, log.Entries()))
	// The before snapshot is recorded after the call and before it runs.
	assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "assistant",
		"tool_call", "snapshot", "tool_result", "snapshot", "tool_call", "tool_result", "tool_call", "tool_result", "snapshot",
		"assistant", "tool_call", "tool_result", "snapshot", "assistant", "end"}, types(log.Entries()))
}

func TestSnapshotFailureWarnsOnceAndCallsRun(t *testing.T) {
	log := &recLog{}
	writer := &fakeTool{name: "write", out: "written"}
	snaps := &fakeSnaps{err: errors.New("git exploded")}
	m := &fakeModel{responses: []llm.Response{say("w", call("c1", "write", `{}`), call("c2", "write", `{}`)), say("done")}}
	var warnings []string
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(writer), Gate: allowAll, Log: log, Snapshots: snaps,
		Sink: func(ev Event) {
			if ev.Type == EventWarning {
				warnings = append(warnings, ev.Text)
			}
		}}, "go")
	require.NoError(t, err)
	assert.Len(t, writer.ran, 2, "the calls ran")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "git exploded")
	assert.Empty(t, snapKinds(t, log.Entries()))
}

func TestSnapshotsNotTakenForDeniedCalls(t *testing.T) {
	log := &recLog{}
	writer := &fakeTool{name: "write", out: "written"}
	snaps := &fakeSnaps{trees: []string{"t0"}}
	deny := gateFunc(func(string, bool, json.RawMessage) tools.Verdict {
		return tools.Verdict{Decision: tools.Deny, Reason: "no"}
	})
	m := &fakeModel{responses: []llm.Response{say("w", call("c1", "write", `{}`)), say("done")}}
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(writer), Gate: deny, Log: log, Snapshots: snaps}, "go")
	require.NoError(t, err)
	assert.Zero(t, snaps.n)
}

func TestRewindIsToldToTheModel(t *testing.T) {
	log := &recLog{}
	m := &fakeModel{responses: []llm.Response{say("first"), say("second")}}
	o := Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: log}
	_, err := Run(context.Background(), o, "do it")
	require.NoError(t, err)
	require.NoError(t, log.Append(context.Background(),
		session.NewEntry(session.TypeSnapshot, session.SnapshotData{Tree: "aa", Kind: session.SnapSafety}, ""),
		session.NewEntry(session.TypeSnapshot, session.SnapshotData{Tree: "bb", Kind: session.SnapRewind, To: 2}, "")))
	_, err = Run(context.Background(), o, "again")
	require.NoError(t, err)
	require.Len(t, m.reqs, 2)
	msgs := m.reqs[1].Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, llm.RoleUser, msgs[2].Role)
	assert.Contains(t, msgs[2].Text, "rewound the work tree to the code as it was at entry 2")
	assert.Contains(t, msgs[2].Text, "again")
	assert.Equal(t, 1, strings.Count(msgs[2].Text, "[decode:"), "the safety snapshot says nothing")
}
