package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"decode/agent/llm"
	"decode/session"
)

// sessionStat is what `decode log --stat` reports about a session.
type sessionStat struct {
	Session        string     `json:"session"`
	Model          string     `json:"model"`
	Status         string     `json:"status"`
	Entries        int        `json:"entries"`
	Turns          int        `json:"turns"`
	Runs           int        `json:"runs"`
	Requests       int        `json:"requests"`
	FailedRequests int        `json:"failed_requests"`
	Usage          llm.Usage  `json:"usage"`
	CostUSD        *float64   `json:"cost_usd,omitempty"`
	ToolCalls      int        `json:"tool_calls"`
	Tools          []toolStat `json:"tools"`
	WallMs         int64      `json:"wall_ms"`
	ModelMs        int64      `json:"model_ms"`
	ToolMs         int64      `json:"tool_ms"`
	Unreadable     int        `json:"unreadable_lines"`
	// Compactions counts the compaction entries; Summaries the model calls
	// they made (their usage is in Usage); Saved the tokens they took out
	// of the context, as estimated at the time.
	Compactions int `json:"compactions"`
	Summaries   int `json:"summaries"`
	Saved       int `json:"compaction_saved_tokens"`
	// Code lists the files each step changed in the code.
	Code []stepCode `json:"code,omitempty"`
}

// toolStat counts one tool's calls.
type toolStat struct {
	Name   string `json:"name"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	Denied int    `json:"denied"`
	Ms     int64  `json:"ms"`
}

// statOf adds up a session's entries.
func statOf(s *session.Session) sessionStat {
	return statEntries(s.Info(), len(s.Problems()), s.Entries())
}

// statEntries adds up entries. Cost is shown only when entries carry it: a
// "cost" (USD) in assistant entries, else in end entries.
func statEntries(info session.Info, unreadable int, es []session.Entry) sessionStat {
	st := sessionStat{Session: info.ID, Model: info.Model, Status: string(info.Status), Entries: info.Entries,
		Turns: info.Turns, Unreadable: unreadable}
	tools := map[string]*toolStat{}
	denied := map[string]bool{} // call ids the gate refused
	var askCost, endCost float64
	var haveAskCost, haveEndCost bool
	tail := 0 // index of the first entry after the last end entry
	for i, e := range es {
		switch e.Type {
		case session.TypeAssistant:
			var d struct {
				Usage llm.Usage `json:"usage"`
				Ms    int64     `json:"ms"`
				Cost  *float64  `json:"cost"`
			}
			_ = json.Unmarshal(e.Data, &d)
			st.Requests++
			st.Usage = st.Usage.Add(d.Usage)
			st.ModelMs += d.Ms
			if d.Cost != nil {
				askCost, haveAskCost = askCost+*d.Cost, true
			}
		case session.TypeCompaction:
			var d session.CompactionData
			_ = e.Decode(&d)
			st.Compactions++
			st.Saved += max(d.TokensBefore-d.TokensAfter, 0)
			if d.Usage != (llm.Usage{}) {
				st.Summaries++
				st.Usage = st.Usage.Add(d.Usage)
			}
			if d.Cost > 0 {
				askCost, haveAskCost = askCost+d.Cost, true
			}
		case session.TypeError:
			st.FailedRequests++
		case session.TypeToolCall:
			var d session.ToolCallData
			_ = e.Decode(&d)
			t := toolFor(tools, d.Name)
			t.Calls++
			st.ToolCalls++
			if d.Decision == "deny" {
				t.Denied++
				denied[d.CallID] = true
			}
		case session.TypeToolResult:
			var d session.ToolResultData
			_ = e.Decode(&d)
			t := toolFor(tools, d.Name)
			t.Ms += d.Ms
			st.ToolMs += d.Ms
			if d.IsError && !denied[d.CallID] {
				t.Errors++
			}
		case session.TypeEnd:
			var d struct {
				Ms   int64    `json:"ms"`
				Cost *float64 `json:"cost"`
			}
			_ = json.Unmarshal(e.Data, &d)
			st.Runs++
			st.WallMs += d.Ms
			tail = i + 1
			if d.Cost != nil {
				endCost, haveEndCost = endCost+*d.Cost, true
			}
		}
	}
	// A run that has not ended (running, or killed) counts from its first
	// entry to its last.
	if tail < len(es) {
		st.WallMs += es[len(es)-1].TS.Sub(es[tail].TS).Milliseconds()
	}
	switch {
	case haveAskCost:
		st.CostUSD = &askCost
	case haveEndCost:
		st.CostUSD = &endCost
	}
	st.Tools = byCalls(tools)
	return st
}

// byCalls lists the tools most called first.
func byCalls(tools map[string]*toolStat) []toolStat {
	out := make([]toolStat, 0, len(tools))
	for _, t := range tools {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	return out
}

func toolFor(m map[string]*toolStat, name string) *toolStat {
	t := m[name]
	if t == nil {
		t = &toolStat{Name: name}
		m[name] = t
	}
	return t
}

// printStat prints the figures as aligned "label  value" lines.
func printStat(w io.Writer, st sessionStat) {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", label, fmt.Sprintf(format, args...))
	}
	line("session", "%s", st.Session)
	line("model", "%s", orDash(st.Model))
	line("status", "%s", orDash(st.Status))
	line("turns", "%d (%s, %s)", st.Turns, plural(st.Entries, "entry"), plural(st.Runs, "run"))
	req := fmt.Sprint(st.Requests)
	if st.FailedRequests > 0 {
		req += fmt.Sprintf(" (%d failed)", st.FailedRequests)
	}
	line("requests", "%s", req)
	line("tokens", "%d in, %d out, %d cache read, %d cache write", st.Usage.Input, st.Usage.Output, st.Usage.CacheRead, st.Usage.CacheWrite)
	if st.Compactions > 0 {
		line("compactions", "%d (%s, about %d tokens taken out of the context)", st.Compactions, plural(st.Summaries, "summary call"), st.Saved)
	}
	if st.CostUSD != nil {
		line("cost", "$%.4f", *st.CostUSD)
	}
	line("time", "%s wall, %s in the model, %s in tools", duration(st.WallMs), duration(st.ModelMs), duration(st.ToolMs))
	line("tool calls", "%d", st.ToolCalls)
	for _, t := range st.Tools {
		var notes []string
		if t.Errors > 0 {
			notes = append(notes, plural(t.Errors, "error"))
		}
		if t.Denied > 0 {
			notes = append(notes, fmt.Sprintf("%d denied", t.Denied))
		}
		extra := ""
		if len(notes) > 0 {
			extra = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(&b, "  %-12s %4d  %7s%s\n", t.Name, t.Calls, duration(t.Ms), extra)
	}
	if st.Unreadable > 0 {
		line("unreadable", "%s skipped (decode log --check %s)", plural(st.Unreadable, "line"), st.Session)
	}
	io.WriteString(w, b.String())
}

// plural counts n of word: "1 line", "2 lines", "3 entries".
func plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// knownType reports whether this build understands entries of type t;
// --check mentions others as kept but skipped.
func knownType(t string) bool {
	switch t {
	case session.TypeStart, session.TypeUser, session.TypeAssistant, session.TypeToolCall,
		session.TypeToolResult, session.TypeApproval, session.TypeApprovalReq, session.TypeSteer,
		session.TypeCompaction, session.TypeFork, session.TypeLimit, session.TypeInterrupted,
		session.TypeError, session.TypeEnd, session.TypeSnapshot, session.TypePlan, session.TypePlanStep:
		return true
	}
	return false
}

// logCheck lists the unreadable lines of one session, or of every session
// when none is named, and fails (exit 1) if there are any. Entries of types
// this build does not know are listed as notes: they are kept, not errors.
func logCheck(ctx context.Context, o *LogOptions, st *session.Store) error {
	out := o.F.IO.Out
	var infos []session.Info
	if len(o.Sessions) == 1 {
		infos = []session.Info{{ID: o.Sessions[0]}}
	} else {
		var err error
		if infos, err = st.List(ctx); err != nil {
			return err
		}
	}
	// Every session is checked, whatever the others hold: the damage of
	// one is reported with its position and the check goes on.
	bad, lines, newer := 0, 0, 0
	for _, in := range infos {
		if in.Damage != "" {
			fmt.Fprintf(out, "%s: %s\n", in.ID, in.Damage)
			bad++
			continue
		}
		s, err := st.Open(ctx, in.ID)
		var ve *session.VersionError
		if errors.As(err, &ve) {
			// Written by a newer decode: not damage, but not checkable here.
			fmt.Fprintf(out, "%s entry %d: note: schema version %d is newer than this decode reads (%d); not checked: upgrade decode to check it\n", in.ID, ve.Entry, ve.Version, session.Version)
			newer++
			continue
		}
		if err != nil {
			if len(o.Sessions) == 1 {
				var nf *session.NotFoundError
				var amb *session.AmbiguousError
				if errors.As(err, &nf) || errors.As(err, &amb) {
					return err
				}
			}
			fmt.Fprintf(out, "%s: %v\n", in.ID, err)
			bad++
			continue
		}
		for _, p := range s.Problems() {
			fmt.Fprintf(out, "%s %s\n", s.ID(), p.Position())
		}
		for _, e := range s.Entries() {
			if !knownType(e.Type) {
				fmt.Fprintf(out, "%s entry %d: note: type %q is unknown to this decode; kept and skipped\n", s.ID(), e.ID, e.Type)
			}
		}
		if n := len(s.Problems()); n > 0 {
			bad++
			lines += n
		}
	}
	if bad > 0 {
		return fmt.Errorf("%s damaged (%s) of %s checked; unreadable lines are skipped when reading and resuming, and git fsck --strict checks the objects",
			plural(bad, "session"), plural(lines, "problem"), plural(len(infos), "session"))
	}
	if newer > 0 {
		fmt.Fprintf(out, "%s checked, all lines readable; %s by a newer decode not checked\n", plural(len(infos)-newer, "session"), plural(newer, "session"))
		return nil
	}
	fmt.Fprintf(out, "%s checked, all lines readable\n", plural(len(infos), "session"))
	return nil
}
