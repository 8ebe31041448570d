package commands

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// acpSink turns a run's events into session/update notifications:
// answer text as agent_message_chunk, each tool call as tool_call then
// tool_call_update (with a diff of the file for edits), the todo tool's
// list as a plan.
type acpSink struct {
	srv  *acpServer
	id   string
	root string // relative tool paths are relative to it
	// buf, when set, is the client's buffers, read through ctx.
	buf tools.Buffers
	ctx context.Context

	mu        sync.Mutex
	announced map[string]bool   // tool calls the client was told of
	before    map[string]string // content of an edited file before the call
	beforeOK  map[string]bool   // whether the file existed before
}

func newACPSink(srv *acpServer, id, cwd string) *acpSink {
	return &acpSink{srv: srv, id: id, root: firstNonEmpty(repoRoot(cwd), cwd),
		announced: map[string]bool{}, before: map[string]string{}, beforeOK: map[string]bool{}}
}

func (k *acpSink) Lock()                         {}
func (k *acpSink) Unlock()                       {}
func (k *acpSink) begin(*agent.Options, runInfo) {}
func (k *acpSink) finish(agent.Outcome, error)   {}
func (k *acpSink) close(error)                   {}
func (k *acpSink) warn(s string)                 { fmt.Fprintln(k.srv.f.IO.Err, "decode: warning: "+s) }
func (k *acpSink) send(u map[string]any)         { k.srv.update(k.id, u) }
func (k *acpSink) path(p string) string          { return absPath(k.root, p) }

// readFile reads a file for an edit's diff as the file tools see it:
// through the client's buffers when it offers them, else from disk.
func (k *acpSink) readFile(abs string) ([]byte, error) {
	if k.buf != nil {
		if text, err := k.buf.ReadText(k.ctx, abs); err == nil {
			return []byte(text), nil
		}
	}
	return os.ReadFile(abs)
}
func (k *acpSink) isAnnounced(id string) (ok bool) {
	k.mu.Lock()
	ok = k.announced[id]
	k.mu.Unlock()
	return
}

func (k *acpSink) event(ev agent.Event) {
	switch ev.Type {
	case agent.EventText:
		k.send(textChunk("agent_message_chunk", ev.Text))
	case agent.EventWarning:
		k.warn(ev.Text)
	case agent.EventToolCall:
		k.toolCall(ev)
	case agent.EventToolResult:
		k.toolResult(ev)
	}
}

// announce tells the client of a call (status pending) before the
// permission request that refers to it.
func (k *acpSink) announce(call llm.ToolCall, status string) {
	k.mu.Lock()
	k.announced[call.ID] = true
	k.mu.Unlock()
	u := toolCallUpdate(call, k.root)
	u["sessionUpdate"] = "tool_call"
	u["status"] = status
	k.send(u)
}

func (k *acpSink) toolCall(ev agent.Event) {
	call := *ev.Call
	if call.Name == "todo" {
		if plan := todoPlan(call.Args); plan != nil {
			k.send(plan)
		}
	}
	if p := editedPath(call); p != "" {
		data, err := k.readFile(k.path(p))
		k.mu.Lock()
		k.before[call.ID], k.beforeOK[call.ID] = string(data), err == nil
		k.mu.Unlock()
	}
	status := "in_progress"
	if ev.Decision == string(tools.Deny) {
		status = "failed"
	}
	if !k.isAnnounced(call.ID) {
		k.announce(call, status)
	} else {
		k.send(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": call.ID, "status": status})
	}
	if status == "failed" && ev.Reason != "" {
		k.send(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": call.ID,
			"content": []any{textContent("denied: " + ev.Reason)}})
	}
}

func (k *acpSink) toolResult(ev agent.Event) {
	if ev.Result == nil {
		return
	}
	r := ev.Result
	status := "completed"
	if r.IsError {
		status = "failed"
	}
	content := []any{}
	if ev.Call != nil {
		if p := editedPath(*ev.Call); p != "" && !r.IsError {
			k.mu.Lock()
			old, existed := k.before[r.CallID], k.beforeOK[r.CallID]
			k.mu.Unlock()
			if data, err := k.readFile(k.path(p)); err == nil {
				d := map[string]any{"type": "diff", "path": k.path(p), "newText": string(data)}
				if existed {
					d["oldText"] = old
				}
				content = append(content, d)
			}
		}
	}
	text, _ := capContent(r.Content, 16<<10)
	content = append(content, textContent(text))
	k.send(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": r.CallID, "status": status, "content": content})
}

func textContent(text string) map[string]any {
	return map[string]any{"type": "content", "content": map[string]string{"type": "text", "text": text}}
}

// editedPath is the file an edit tool call changes, or "".
func editedPath(call llm.ToolCall) string {
	switch call.Name {
	case "edit", "write", "multi_edit":
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(call.Args, &a) == nil {
			return a.Path
		}
	}
	return ""
}

// toolKinds maps decode's tools to ACP's tool kinds (icons in editors).
var toolKinds = map[string]string{
	"read": "read", "edit": "edit", "write": "edit", "multi_edit": "edit",
	"glob": "search", "grep": "search", "bash": "execute", "web_fetch": "fetch",
	"todo": "think", "skill": "read",
}

// toolCallUpdate describes a call for tool_call and permission requests.
func toolCallUpdate(call llm.ToolCall, root string) map[string]any {
	kind := toolKinds[call.Name]
	if kind == "" {
		kind = "other"
	}
	title := call.Name
	if s := agent.Summarize(call.Args); s != "" {
		title += " " + s
	}
	u := map[string]any{"toolCallId": call.ID, "title": title, "kind": kind, "rawInput": json.RawMessage(eventArgs(call.Args))}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(call.Args, &a) == nil && a.Path != "" {
		u["locations"] = []map[string]string{{"path": absPath(root, a.Path)}}
	}
	return u
}

// todoPlan is the todo tool's list as a plan update.
func todoPlan(args json.RawMessage) map[string]any {
	var a struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	entries := []map[string]string{}
	for _, t := range a.Todos {
		status := strings.ReplaceAll(strings.ToLower(t.Status), "-", "_")
		switch status {
		case "pending", "in_progress", "completed":
		case "done", "complete":
			status = "completed"
		default:
			status = "pending"
		}
		entries = append(entries, map[string]string{"content": t.Content, "priority": "medium", "status": status})
	}
	return map[string]any{"sessionUpdate": "plan", "entries": entries}
}

// Permission options decode offers for every gate ask.
const (
	acpAllowOnce   = "allow_once"
	acpAllowAlways = "allow_always"
	acpReject      = "reject_once"
)

// approver asks the client, with session/request_permission, about each
// call the gate sends to ask. "Always" adds a rule for the call to the
// session's allow list: the next prompt runs with it, and records it in
// the session as a change of its run spec (as decode resume --allow does).
func (s *acpServer) approver(ctx context.Context, sess *acpSession, sink *acpSink) agent.Approver {
	return func(_ context.Context, call llm.ToolCall, v tools.Verdict) agent.Approval {
		key := call.Name + "\x00" + agent.Summarize(call.Args)
		sess.mu.Lock()
		always := sess.always[key]
		sess.mu.Unlock()
		if always {
			return agent.Approval{OK: true}
		}
		sink.announce(call, "pending")
		tc := toolCallUpdate(call, sink.root)
		tc["status"] = "pending"
		var res struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}
		err := s.conn.call(ctx, "session/request_permission", map[string]any{
			"sessionId": sess.id,
			"toolCall":  tc,
			"options": []map[string]string{
				{"optionId": acpAllowOnce, "name": "Allow", "kind": "allow_once"},
				{"optionId": acpAllowAlways, "name": "Always allow in this session", "kind": "allow_always"},
				{"optionId": acpReject, "name": "Reject", "kind": "reject_once"},
			},
		}, &res)
		switch {
		case err != nil && ctx.Err() != nil:
			return agent.Approval{Reason: "the user cancelled the turn in the editor"}
		case err != nil:
			return agent.Approval{Reason: "no answer from the editor to the permission request (" + err.Error() + ")"}
		case res.Outcome.Outcome == "cancelled":
			sess.mu.Lock()
			if sess.turn != nil {
				sess.turn.cancel() // the client says the turn is cancelled
			}
			sess.mu.Unlock()
			return agent.Approval{Reason: "the user cancelled the turn at the permission request"}
		}
		switch res.Outcome.OptionID {
		case acpAllowOnce:
			return agent.Approval{OK: true}
		case acpAllowAlways:
			sess.mu.Lock()
			sess.always[key] = true
			if rule := alwaysRule(call, v); rule != "" {
				sess.allow = append(sess.allow, rule)
			}
			sess.mu.Unlock()
			return agent.Approval{OK: true}
		}
		return agent.Approval{Reason: "the user rejected this call in the editor"}
	}
}

// alwaysRule is the allow rule that names exactly this call: bash(COMMAND)
// for a command, TOOL(PATH) for a file tool, or "" when the call has
// neither or a rule could not say it exactly (a glob character in it).
func alwaysRule(call llm.ToolCall, _ tools.Verdict) string {
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	if json.Unmarshal(call.Args, &a) != nil {
		return ""
	}
	spec := a.Path
	if call.Name == "bash" {
		spec = a.Command
	}
	if spec == "" || strings.ContainsAny(spec, "*?[]{}()\n\\") {
		return ""
	}
	rule := call.Name + "(" + spec + ")"
	if _, err := tools.NewGate(tools.GateConfig{Mode: tools.ModeDefault, Root: os.TempDir(), Allow: []string{rule}}); err != nil {
		return ""
	}
	return rule
}

// replayHistory turns a recorded session into the updates a client shows
// on session/load: the user's prompts, the answers, the tool calls with
// their results.
func replayHistory(es []session.Entry, root string, send func(map[string]any)) {
	for _, e := range es {
		switch e.Type {
		case session.TypeUser:
			var d session.UserData
			if e.Decode(&d) == nil && d.Text != "" {
				send(textChunk("user_message_chunk", d.Text))
			}
			for _, a := range d.Attachments {
				if a.IsImage() { // the images the prompt carried, as the client sent them
					send(map[string]any{"sessionUpdate": "user_message_chunk", "content": map[string]string{
						"type": "image", "mimeType": a.MIME, "data": base64.StdEncoding.EncodeToString(a.Image), "uri": a.Path}})
				}
			}
		case session.TypeAssistant:
			var d session.AssistantData
			if e.Decode(&d) != nil {
				continue
			}
			if d.Message.Text != "" {
				send(textChunk("agent_message_chunk", d.Message.Text))
			}
			for _, c := range d.Message.Calls {
				u := toolCallUpdate(c, root)
				u["sessionUpdate"], u["status"] = "tool_call", "pending"
				send(u)
				if c.Name == "todo" {
					if plan := todoPlan(c.Args); plan != nil {
						send(plan)
					}
				}
			}
		case session.TypeToolResult:
			var d session.ToolResultData
			if e.Decode(&d) != nil {
				continue
			}
			status := "completed"
			if d.IsError {
				status = "failed"
			}
			text, _ := capContent(d.Content, 16<<10)
			send(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": d.CallID, "status": status,
				"content": []any{textContent(text)}})
		}
	}
}
