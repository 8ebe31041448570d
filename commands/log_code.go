package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"decode/agent"
	"decode/session"
)

// snapshotText is what the transcript shows of a snapshot entry.
func snapshotText(e session.Entry) string {
	var d session.SnapshotData
	_ = e.Decode(&d)
	tree := d.Tree
	if len(tree) > 12 {
		tree = tree[:12]
	}
	line := fmt.Sprintf("# code %s: snapshot %s", orDash(d.Kind), tree)
	if d.Kind == session.SnapRewind {
		line = fmt.Sprintf("# code rewound to entry %d: snapshot %s", d.To, tree)
	}
	if n := len(d.Skipped); n > 0 {
		line += fmt.Sprintf(" (skipped %s: %s", plural(n, "path"), d.Skipped[0].Path)
		if n > 1 {
			line += ", …"
		}
		line += ")"
	}
	return line
}

// stepCode is what one step changed in the code, for decode log --stat.
type stepCode struct {
	// Entry is the snapshot entry recording the change.
	Entry int `json:"entry"`
	// Kind is the snapshot's kind; Call, for a snapshot taken after a
	// call, the call as the transcript shows it.
	Kind  string               `json:"kind"`
	Call  string               `json:"call,omitempty"`
	Files []session.FileChange `json:"files"`
}

// codeSteps lists the files each snapshot of es changed since the one
// before it.
func codeSteps(ctx context.Context, st *session.Store, es []session.Entry) ([]stepCode, error) {
	snaps := session.Snapshots(es)
	if len(snaps) < 2 {
		return nil, nil
	}
	calls := map[string]string{}
	for _, e := range es {
		if e.Type == session.TypeToolCall {
			var d session.ToolCallData
			if e.Decode(&d) == nil {
				calls[d.CallID] = strings.TrimSpace(d.Name + " " + agent.Summarize(d.Args))
			}
		}
	}
	pairs := make([][2]string, len(snaps)-1)
	for i := range pairs {
		pairs[i] = [2]string{snaps[i].Tree, snaps[i+1].Tree}
	}
	changes, err := st.Changes(ctx, pairs)
	if err != nil {
		return nil, err
	}
	var out []stepCode
	for i, c := range changes {
		if len(c) == 0 {
			continue
		}
		s := snaps[i+1]
		out = append(out, stepCode{Entry: s.Entry, Kind: s.Kind, Call: calls[s.CallID], Files: c})
	}
	return out, nil
}

// printCodeSteps prints the files each step changed, under decode log --stat.
func printCodeSteps(w io.Writer, steps []stepCode) {
	if len(steps) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("code changes by step:\n")
	for _, s := range steps {
		what := s.Call
		switch {
		case s.Kind == session.SnapBefore:
			what = "before " + orDash(what) + " (changed outside the session)"
		case s.Kind == session.SnapSafety:
			what = "before a rewind (changed outside the session)"
		case s.Kind == session.SnapRewind:
			what = "rewind"
		}
		fmt.Fprintf(&b, "%6d  %s\n", s.Entry, what)
		for _, f := range s.Files {
			if f.Binary {
				fmt.Fprintf(&b, "        %-9s %s\n", "binary", f.Path)
				continue
			}
			fmt.Fprintf(&b, "        %-9s %s\n", fmt.Sprintf("+%d -%d", f.Added, f.Deleted), f.Path)
		}
	}
	io.WriteString(w, b.String())
}
