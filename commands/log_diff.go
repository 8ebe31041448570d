package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"decode/session"
)

// sessionDiff is where two sessions diverge and what each did after.
type sessionDiff struct {
	A      string          `json:"a"`
	B      string          `json:"b"`
	Common int             `json:"common"` // entries both share, from the first
	AAfter []session.Entry `json:"a_after"`
	BAfter []session.Entry `json:"b_after"`
}

// logDiff compares two sessions: a fork or a replay shares a prefix of
// entries with its source (the same lines, as it shares the git history).
func logDiff(ctx context.Context, o *LogOptions, st *session.Store) error {
	a, err := st.Open(ctx, o.Sessions[0])
	if err != nil {
		return err
	}
	b, err := st.Open(ctx, o.Sessions[1])
	if err != nil {
		return err
	}
	warnProblems(o.F.IO.Err, a)
	warnProblems(o.F.IO.Err, b)
	d := diffSessions(a.ID(), a.Entries(), b.ID(), b.Entries())
	if o.JSON {
		return writeJSON(o.F.IO.Out, d)
	}
	printDiff(o.F.IO.Out, d, a.Entries(), statOf(a), statOf(b))
	return nil
}

func diffSessions(aID string, a []session.Entry, bID string, b []session.Entry) sessionDiff {
	n := 0
	for n < len(a) && n < len(b) && sameEntry(a[n], b[n]) {
		n++
	}
	return sessionDiff{A: aID, B: bID, Common: n, AAfter: nonNil(a[n:]), BAfter: nonNil(b[n:])}
}

func nonNil(es []session.Entry) []session.Entry {
	if es == nil {
		return []session.Entry{}
	}
	return es
}

// sameEntry compares what is stored of two entries.
func sameEntry(x, y session.Entry) bool {
	return x.ID == y.ID && x.Parent == y.Parent && x.Type == y.Type && x.TS.Equal(y.TS) && bytes.Equal(x.Data, y.Data)
}

// printDiff prints the shared prefix, then each side's entries after it, as
// in the transcript, each under a one-line summary of that session.
func printDiff(w io.Writer, d sessionDiff, a []session.Entry, sa, sb sessionStat) {
	var b strings.Builder
	side := func(tag string, st sessionStat) {
		fmt.Fprintf(&b, "%s %s  %s  %s  %s, %d tokens in, %d out, %s\n", tag, st.Session, orDash(st.Model),
			orDash(st.Status), plural(st.Requests, "request"), st.Usage.Input, st.Usage.Output, plural(st.ToolCalls, "tool call"))
	}
	side("A", sa)
	side("B", sb)
	switch {
	case d.Common == 0:
		b.WriteString("no entries in common: the sessions are unrelated\n")
	default:
		last := a[d.Common-1]
		fmt.Fprintf(&b, "common: %s, up to entry %d: %s\n", plural(d.Common, "entry"), last.ID, clipRunes(firstLineOf(entryText(last)), 72))
	}
	if len(d.AAfter) == 0 && len(d.BAfter) == 0 {
		b.WriteString("the sessions are identical\n")
		io.WriteString(w, b.String())
		return
	}
	after := func(tag, id string, es []session.Entry) {
		if len(es) == 0 {
			fmt.Fprintf(&b, "\n%s %s: nothing after that\n", tag, id)
			return
		}
		fmt.Fprintf(&b, "\n%s %s: %s after\n", tag, id, plural(len(es), "entry"))
		var t strings.Builder
		printTranscript(&t, es)
		b.WriteString(t.String())
	}
	after("A", d.A, d.AAfter)
	after("B", d.B, d.BAfter)
	io.WriteString(w, b.String())
}
