package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"decode/agent/llm"
	"decode/session"
)

// Bounds of a state record, so that what must survive a compaction cannot
// itself fill the window.
const (
	maxStateFiles  = 100 // files read, and files modified
	maxStateFailed = 12  // failed tool calls, the latest
	maxFailedError = 600 // bytes of a failed call's error kept
	maxFailedArgs  = 300 // bytes of a failed call's arguments kept
)

// stateInput is what a state record takes besides the log.
type stateInput struct {
	mode  string
	rules []string
	// budget caps the bytes of user messages given in full; past it the
	// oldest are given by reference (the task itself always in full).
	budget int
}

// buildState updates the state record prev (zero for a session never
// compacted) with entries, the entries after the compaction prev came
// from. It is built from the log alone, never by the model.
func buildState(prev session.StateRecord, entries []session.Entry, in stateInput) session.StateRecord {
	st := prev
	st.Messages = slices.Clone(prev.Messages)
	st.Read, st.Modified = slices.Clone(prev.Read), slices.Clone(prev.Modified)
	st.Failed = slices.Clone(prev.Failed)
	st.Mode, st.Rules = in.mode, in.rules
	calls := map[string]llm.ToolCall{}
	for _, e := range entries {
		switch e.Type {
		case session.TypeUser, session.TypeSteer:
			var d session.UserData
			if e.Decode(&d) != nil {
				continue
			}
			m := session.StateMessage{ID: e.ID, Type: e.Type, Text: d.Text}
			if st.Task.ID == 0 && e.Type == session.TypeUser {
				st.Task = m
			} else {
				st.Messages = append(st.Messages, m)
			}
		case session.TypePlan:
			var d session.PlanData
			if e.Decode(&d) == nil && len(d.Steps) > 0 {
				st.Plan, st.Step = &d, d.Steps[0].N
			}
		case session.TypePlanStep:
			var d session.PlanStepData
			if e.Decode(&d) == nil && d.Status == "done" && d.N >= st.Step {
				st.Step = d.N + 1
			}
		case session.TypeAssistant:
			var d session.AssistantData
			if e.Decode(&d) == nil {
				for _, c := range d.Message.Calls {
					calls[c.ID] = c
				}
			}
		case session.TypeToolResult:
			var d session.ToolResultData
			if e.Decode(&d) == nil {
				observeResult(&st, e.ID, d.ToolResult, calls[d.CallID])
			}
		}
	}
	fitMessages(&st, in.budget)
	return st
}

// observeResult records what one tool result says about the state: a
// failure, the todo list, a file read or changed.
func observeResult(st *session.StateRecord, id int, r llm.ToolResult, c llm.ToolCall) {
	name := r.Name
	if name == "" {
		name = c.Name
	}
	if r.IsError {
		st.Failed = append(st.Failed, session.FailedCall{
			ID: id, Name: name, Args: clipArgs(c.Args), Error: clip(r.Content, maxFailedError),
		})
		if n := len(st.Failed); n > maxStateFailed {
			st.Failed = slices.Clone(st.Failed[n-maxStateFailed:])
		}
		return
	}
	switch name {
	case "todo":
		st.Todo = r.Content
	case "read":
		st.Read = touch(st.Read, argPath(c.Args))
	case "write", "edit", "multi_edit":
		st.Modified = touch(st.Modified, argPath(c.Args))
	}
}

// touch moves (or adds) path to the end of list, keeping the newest ones.
func touch(list []string, path string) []string {
	if path == "" {
		return list
	}
	list = slices.DeleteFunc(list, func(p string) bool { return p == path })
	list = append(list, path)
	if n := len(list); n > maxStateFiles {
		list = slices.Clone(list[n-maxStateFiles:])
	}
	return list
}

// argPath is the path argument of a file tool's call.
func argPath(args json.RawMessage) string {
	var a struct {
		Path     string `json:"path"`
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	if a.Path != "" {
		return a.Path
	}
	return a.FilePath
}

// clipArgs keeps a failed call's arguments as JSON, cut when long.
func clipArgs(args json.RawMessage) json.RawMessage {
	if len(args) <= maxFailedArgs && json.Valid(args) {
		return args
	}
	s, _ := json.Marshal(clip(string(args), maxFailedArgs))
	return s
}

// fitMessages gives the newest user messages in full while they fit in
// budget bytes and the older ones by reference. A message once given by
// reference stays so.
func fitMessages(st *session.StateRecord, budget int) {
	used := 0
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := &st.Messages[i]
		if m.Text == "" {
			continue
		}
		if used+len(m.Text) <= budget {
			used += len(m.Text)
			continue
		}
		m.Line, m.Bytes, m.Text = firstLine(m.Text), len(m.Text), ""
	}
}

// foldedText is the user message that opens a compacted context: the
// state record decode keeps, then the model's summary of what was folded.
func foldedText(d session.CompactionData, sid string) string {
	var b strings.Builder
	b.WriteString("[decode compacted this conversation to fit the context window. The earlier messages are in the session log")
	if sid != "" {
		fmt.Fprintf(&b, " (decode log %s)", sid)
	}
	b.WriteString(". Below is decode's record of the state, kept verbatim, then a summary of the earlier conversation.]\n\n<state>\n")
	writeState(&b, d.State, sid)
	b.WriteString("</state>\n")
	if d.Summary != "" {
		b.WriteString("\n<summary>\n")
		b.WriteString(strings.TrimSpace(d.Summary))
		b.WriteString("\n</summary>\n")
	}
	return b.String()
}

// writeState renders a state record for the model.
func writeState(b *strings.Builder, st session.StateRecord, sid string) {
	if st.Task.ID != 0 {
		b.WriteString("The task, as the user gave it:\n")
		writeMessage(b, st.Task, sid)
	}
	if len(st.Messages) > 0 {
		b.WriteString("\nThe user's later messages, in order (steer: sent while you worked):\n")
		for _, m := range st.Messages {
			writeMessage(b, m, sid)
		}
	}
	if st.Mode != "" {
		fmt.Fprintf(b, "\nPermission mode: %s\n", st.Mode)
	}
	if len(st.Rules) > 0 {
		fmt.Fprintf(b, "Rules: %s\n", strings.Join(st.Rules, "; "))
	}
	if st.Plan != nil {
		fmt.Fprintf(b, "\nThe plan being carried out (current step: %d):\n", st.Step)
		for _, s := range st.Plan.Steps {
			mark := "[ ]"
			switch {
			case s.N < st.Step:
				mark = "[x]"
			case s.N == st.Step:
				mark = "[>]"
			}
			fmt.Fprintf(b, "%s %d. %s\n", mark, s.N, s.Text)
		}
	}
	if st.Todo != "" {
		b.WriteString("\nThe todo list, as last written:\n")
		b.WriteString(strings.TrimRight(st.Todo, "\n"))
		b.WriteString("\n")
	}
	if len(st.Read) > 0 {
		fmt.Fprintf(b, "\nFiles read: %s\n", strings.Join(st.Read, ", "))
	}
	if len(st.Modified) > 0 {
		fmt.Fprintf(b, "Files modified: %s\n", strings.Join(st.Modified, ", "))
	}
	if len(st.Failed) > 0 {
		b.WriteString("\nTool calls that failed (the latest):\n")
		for _, f := range st.Failed {
			fmt.Fprintf(b, "- #%d %s %s: %s\n", f.ID, f.Name, string(f.Args), strings.ReplaceAll(f.Error, "\n", " "))
		}
	}
}

// writeMessage renders a user message in full, or by reference.
func writeMessage(b *strings.Builder, m session.StateMessage, sid string) {
	if m.Text != "" {
		fmt.Fprintf(b, "<%s id=\"%d\">\n%s\n</%s>\n", m.Type, m.ID, m.Text, m.Type)
		return
	}
	ref := fmt.Sprintf("decode log %s@%d", sid, m.ID)
	if sid == "" {
		ref = fmt.Sprintf("entry %d", m.ID)
	}
	fmt.Fprintf(b, "<%s id=\"%d\" bytes=\"%d\" ref=\"%s\">%s …</%s>\n", m.Type, m.ID, m.Bytes, ref, m.Line, m.Type)
}

// FoldedText is what the model sees in place of the entries a compaction
// folded: decode's state record, then the summary. sid names the session
// in the pointers it gives.
func FoldedText(d session.CompactionData, sid string) string { return foldedText(d, sid) }
