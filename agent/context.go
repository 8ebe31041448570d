package agent

import (
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
// provider's call/result pairing stays valid.
func Messages(entries []session.Entry) []llm.Message {
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
			msgs = appendUser(msgs, d.Text)
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
		}
	}
	closeTurn()
	return msgs
}

// appendUser adds a user message, merging it into a trailing user message
// so that providers that require alternating roles accept the context.
func appendUser(msgs []llm.Message, text string) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleUser {
		msgs[n-1].Text += "\n\n" + text
		return msgs
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Text: text})
}
