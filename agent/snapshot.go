package agent

import (
	"context"
	"fmt"
	"strings"

	"decode/agent/llm"
	"decode/session"
)

// Snapshotter records the state of the work tree. *session.Snapshotter
// implements it (with the real git and a private index); the loop only
// decides when, and records what it returns.
type Snapshotter interface {
	Snapshot(ctx context.Context) (session.SnapshotData, error)
}

// snapState is what the loop knows about the run's snapshots.
type snapState struct {
	// last is the tree of the session's last snapshot entry.
	last string
	// taken is set once the current step took its "before" snapshot.
	taken bool
	// warned is set once a failure was reported; snapshots go on.
	warned bool
}

// newStep starts a step: its first call that may change files is preceded
// by a snapshot.
func (l *loop) newStep() {
	if l.snaps != nil {
		l.snaps.taken = false
	}
}

// snapshot records the work tree around a call that may change files:
// before the step's first such call (kind before) and after each (after).
// A snapshot equal to the session's last one is not recorded again. A
// failure is a warning: the call runs regardless.
func (l *loop) snapshot(ctx context.Context, kind string, call llm.ToolCall) {
	if l.o.Snapshots == nil {
		return
	}
	if l.snaps == nil {
		l.snaps = &snapState{}
		if s := session.Snapshots(l.o.Log.Entries()); len(s) > 0 {
			l.snaps.last = s[len(s)-1].Tree
		}
	}
	if kind == session.SnapBefore {
		if l.snaps.taken {
			return
		}
		l.snaps.taken = true
	}
	d, err := l.o.Snapshots.Snapshot(ctx)
	if err != nil {
		if !l.snaps.warned {
			l.snaps.warned = true
			l.o.Sink(Event{Type: EventWarning, Text: "code snapshot failed (rewind and diff will miss this step): " + err.Error()})
		}
		return
	}
	if d.Tree == l.snaps.last {
		return
	}
	l.snaps.last = d.Tree
	d.Kind, d.CallID = kind, call.ID
	l.add(session.NewEntry(session.TypeSnapshot, d, strings.TrimSpace("snapshot "+kind+" "+call.Name+" "+Summarize(call.Args))))
}

// rewindNote tells the model, when the session is continued, that decode
// rewind (or fork --code) put the code back as it was at an earlier entry:
// what it remembers doing since is undone. Other snapshots say nothing.
func rewindNote(e session.Entry) string {
	var d session.SnapshotData
	if e.Decode(&d) != nil || d.Kind != session.SnapRewind {
		return ""
	}
	return fmt.Sprintf("[decode: the user rewound the work tree to the code as it was at entry %d of this session; changes made to files after that point are undone. Read files again before relying on them.]", d.To)
}
