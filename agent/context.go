package agent

import (
	"fmt"

	"decode/agent/llm"
	"decode/session"
)

// interruptedNote is what the model is told about a tool call that was
// started but has no logged result (the process died while it ran).
const interruptedNote = "interrupted: decode stopped while this tool call ran, so its outcome is unknown; check the state before repeating it"

// Messages rebuilds the model context from a session's entries: user
// messages, assistant messages, and for each assistant message one tool
// message answering every call it made, in order. A call whose result is
// missing (a crash, a cancelled run) is answered as interrupted, so every
// provider's call/result pairing stays valid. From the session's last
// compaction on, the context starts with its state record and summary,
// followed by the entries it kept (see view).
func Messages(entries []session.Entry) []llm.Message {
	return messagesOf(view(entries, ""))
}

// messagesOf builds the context of entries already folded by view.
func messagesOf(entries []session.Entry) []llm.Message {
	var (
		msgs    []llm.Message
		pending []llm.ToolCall // calls of the last assistant message not yet answered
		results map[string]llm.ToolResult
	)
	closeTurn := func() {
		if len(pending) == 0 {
			return
		}
		msg := llm.Message{Role: llm.RoleTool}
		for _, c := range pending {
			r, ok := results[c.ID]
			if !ok {
				r = llm.ToolResult{CallID: c.ID, Name: c.Name, Content: interruptedNote, IsError: true}
			}
			msg.Results = append(msg.Results, r)
		}
		msgs = append(msgs, msg)
		pending, results = nil, nil
	}
	for _, e := range entries {
		switch e.Type {
		case session.TypeUser, session.TypeSteer:
			var d session.UserData
			if e.Decode(&d) != nil {
				continue
			}
			closeTurn()
			msgs = appendUser(msgs, d.Text, session.Images(d.Attachments)...)
		case session.TypeAssistant:
			var d session.AssistantData
			if e.Decode(&d) != nil {
				continue
			}
			closeTurn()
			msgs = append(msgs, d.Message)
			pending = d.Message.Calls
			results = make(map[string]llm.ToolResult, len(pending))
		case session.TypeToolResult:
			var d session.ToolResultData
			if e.Decode(&d) != nil || results == nil {
				continue
			}
			results[d.CallID] = d.ToolResult
		case session.TypeSnapshot:
			if note := rewindNote(e); note != "" && len(pending) == 0 {
				msgs = appendUser(msgs, note)
			}
		}
	}
	closeTurn()
	return msgs
}

// appendUser adds a user message, merging it into a trailing user message
// so that providers that require alternating roles accept the context.
func appendUser(msgs []llm.Message, text string, images ...llm.Image) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleUser {
		msgs[n-1].Text += "\n\n" + text
		msgs[n-1].Images = append(msgs[n-1].Images, images...)
		return msgs
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Text: text, Images: images})
}

// turn is the last model response of a session while some of its calls
// have no result, with what the log holds about each call so far.
type turn struct {
	calls []llm.ToolCall
	// results are the calls' logged results.
	results map[string]llm.ToolResult
	// started are calls whose tool_call entry is logged: the gate (or a
	// person) decided, and an allowed call may have run.
	started map[string]session.ToolCallData
	// requests are the calls a headless run paused on, answers the
	// decisions recorded for them (the latest wins).
	requests map[string]session.ApprovalRequestData
	answers  map[string]session.ApprovalData
}

func newTurn(calls []llm.ToolCall) *turn {
	return &turn{
		calls:    calls,
		results:  map[string]llm.ToolResult{},
		started:  map[string]session.ToolCallData{},
		requests: map[string]session.ApprovalRequestData{},
		answers:  map[string]session.ApprovalData{},
	}
}

// mayHaveRun marks the calls the log says nothing more about as started:
// the lines after the last readable one are lost and may have recorded
// them starting, so a call that is not read-only is reported as
// interrupted rather than run a second time.
func (t *turn) mayHaveRun() {
	for _, c := range t.calls {
		_, done := t.results[c.ID]
		_, started := t.started[c.ID]
		_, waits := t.requests[c.ID]
		if !done && !started && !waits {
			t.started[c.ID] = session.ToolCallData{CallID: c.ID, Name: c.Name, Args: c.Args, Decision: "allow",
				Reason: "the session's last lines are unreadable: this call may have run"}
		}
	}
}

// history rebuilds the context like Messages, except that when the last
// model response still has calls without a result (a pause, a crash, a
// stop between calls) the context ends with that response and the open
// turn is returned, for the loop to settle each call exactly once.
func history(entries []session.Entry, sid string) ([]llm.Message, *turn) {
	entries = view(entries, sid)
	last := -1
	var msg llm.Message
	for i := len(entries) - 1; i >= 0 && last < 0; i-- {
		switch entries[i].Type {
		case session.TypeUser, session.TypeSteer:
			return messagesOf(entries), nil
		case session.TypeAssistant:
			var d session.AssistantData
			if entries[i].Decode(&d) == nil {
				last, msg = i, d.Message
			}
		}
	}
	if last < 0 || len(msg.Calls) == 0 {
		return messagesOf(entries), nil
	}
	t := newTurn(msg.Calls)
	for _, e := range entries[last+1:] {
		t.observe(e)
	}
	if t.answered() {
		return messagesOf(entries), nil
	}
	return append(messagesOf(entries[:last]), msg), t
}

// observe records what one entry after the response says about its calls.
func (t *turn) observe(e session.Entry) {
	switch e.Type {
	case session.TypeToolResult:
		var d session.ToolResultData
		if e.Decode(&d) == nil {
			t.results[d.CallID] = d.ToolResult
		}
	case session.TypeToolCall:
		var d session.ToolCallData
		if e.Decode(&d) == nil {
			t.started[d.CallID] = d
		}
	case session.TypeApprovalReq:
		var d session.ApprovalRequestData
		if e.Decode(&d) == nil {
			t.requests[d.CallID] = d
		}
	case session.TypeApproval:
		var d session.ApprovalData
		if e.Decode(&d) == nil {
			t.answers[d.CallID] = d
		}
	}
}

// answered reports whether every call has a result.
func (t *turn) answered() bool {
	for _, c := range t.calls {
		if _, ok := t.results[c.ID]; !ok {
			return false
		}
	}
	return true
}

// lastCompaction returns the index of the last compaction entry that
// decodes, and its data; -1 when there is none.
func lastCompaction(entries []session.Entry) (int, session.CompactionData) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type != session.TypeCompaction {
			continue
		}
		var d session.CompactionData
		if entries[i].Decode(&d) == nil {
			return i, d
		}
	}
	return -1, session.CompactionData{}
}

// view returns the entries the context is built from. Before any
// compaction, that is entries. After one, it is a user message holding the
// last compaction's state record and summary, then the entries it kept
// (from its first kept entry to the compaction) and those after it, with
// the tool results it elided replaced by a pointer into the log. The raw
// entries are not changed: this is a view for building the context. sid
// names the session in those pointers.
func view(entries []session.Entry, sid string) []session.Entry {
	c, d := lastCompaction(entries)
	if c < 0 {
		return entries
	}
	out := make([]session.Entry, 0, len(entries)-c+1)
	out = append(out, session.NewEntry(session.TypeUser, session.UserData{Text: foldedText(d, sid)}, ""))
	from := c + 1
	if d.FirstKept > 0 {
		for i := c - 1; i >= 0 && entries[i].ID >= d.FirstKept; i-- {
			from = i
		}
	}
	elided := make(map[int]bool, len(d.Elided))
	for _, id := range d.Elided {
		elided[id] = true
	}
	for _, e := range entries[from:] {
		switch {
		case e.Type == session.TypeCompaction:
			continue
		case elided[e.ID] && e.Type == session.TypeToolResult:
			e = elide(e, sid)
		}
		out = append(out, e)
	}
	return out
}

// elide returns a tool_result entry whose output is replaced by a pointer
// to the entry in the log.
func elide(e session.Entry, sid string) session.Entry {
	var d session.ToolResultData
	if e.Decode(&d) != nil {
		return e
	}
	d.Content = elidedNote(sid, e.ID)
	out := session.NewEntry(session.TypeToolResult, d, "")
	out.ID, out.Parent, out.TS = e.ID, e.Parent, e.TS
	return out
}

// elidedNote is what the model sees in place of an elided tool output.
func elidedNote(sid string, id int) string {
	if sid == "" {
		sid = "SESSION"
	}
	return fmt.Sprintf("output elided: decode log %s@%d", sid, id)
}
