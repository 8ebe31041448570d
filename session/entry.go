// Package session stores decode sessions as append-only JSONL in git: one ref
// per session, one commit per appended batch of entries, the JSONL split into
// chunk files of at most 64 KiB so that an append rewrites only the last one.
package session

import (
	"encoding/json"
	"fmt"
	"time"

	"decode/agent/llm"
)

// Version is the entry schema version written by this build. Reading a
// session passes each older entry through migrations and refuses one newer
// than this (a *VersionError).
const Version = 1

// migrations turn an entry of schema version v (the key) into one of
// version v+1. When Version goes up, the change to an entry's shape gets a
// function here, so sessions written before it read as if written now. A
// missing step means the shape did not change (version 0 is a line written
// without "v", which reads as version 1).
var migrations = map[int]func(Entry) (Entry, error){}

// VersionError reports an entry written by a newer decode, whose schema
// this build does not know. The session is refused whole rather than read
// in part, so nothing is resumed or appended on a misreading of it.
type VersionError struct {
	Session string
	Entry   int // the first such entry's id
	Version int // its schema version
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("session %s: entry %d has schema version %d; this decode reads versions up to %d: upgrade decode to read it (the session is left as it is)",
		e.Session, e.Entry, e.Version, Version)
}

// migrate brings an entry read from a session up to Version.
func migrate(e Entry) (Entry, error) {
	switch {
	case e.V > Version:
		return e, &VersionError{Entry: e.ID, Version: e.V}
	case e.V < 0:
		return e, fmt.Errorf("entry %d has schema version %d", e.ID, e.V)
	}
	for e.V < Version {
		from := e.V
		if step := migrations[from]; step != nil {
			var err error
			if e, err = step(e); err != nil {
				return e, fmt.Errorf("migrate entry %d from schema version %d: %w", e.ID, from, err)
			}
		}
		e.V = from + 1
	}
	return e, nil
}

// Entry types. Readers keep and skip types they do not know.
const (
	TypeStart       = "start"
	TypeUser        = "user"
	TypeAssistant   = "assistant"
	TypeToolCall    = "tool_call"
	TypeToolResult  = "tool_result"
	TypeApproval    = "approval"
	TypeApprovalReq = "approval_request"
	TypeSteer       = "steer"
	TypeCompaction  = "compaction"
	TypeFork        = "fork"
	TypeLimit       = "limit"
	TypeInterrupted = "interrupted"
	TypeError       = "error"
	TypeEnd         = "end"
	// TypePlan is a plan of numbered steps (PlanData); TypePlanStep records
	// the outcome of one step of a run that carries a plan out (PlanStepData).
	TypePlan     = "plan"
	TypePlanStep = "plan_step"
)

// Entry is one line of a session's JSONL.
type Entry struct {
	V      int             `json:"v"`
	ID     int             `json:"id"`
	Parent int             `json:"parent,omitempty"`
	TS     time.Time       `json:"ts"`
	Type   string          `json:"type"`
	Data   json.RawMessage `json:"data,omitempty"`
	// Note is a short human summary used in the commit message
	// ("edit main.go"); it is not part of the JSON line.
	Note string `json:"-"`
}

// NewEntry builds an entry of type typ whose data is v encoded as JSON.
// ID, Parent, V and TS are filled in when the entry is appended.
func NewEntry(typ string, v any, note string) Entry {
	data, err := json.Marshal(v)
	if err != nil {
		// The data types of this package always encode; a failure here is a
		// programming error worth seeing in the log rather than a panic.
		data, _ = json.Marshal(map[string]string{"encode_error": err.Error()})
	}
	return Entry{Type: typ, Data: data, Note: note}
}

// Decode unmarshals the entry's data into v.
func (e Entry) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// StartData opens a session.
type StartData struct {
	Model   string `json:"model"`
	Cwd     string `json:"cwd"`
	Mode    string `json:"mode"`
	Command string `json:"command"` // ask, run, plan, ...
	Version string `json:"version"` // decode's version
	// System is a hash of the system prompt, to notice when it changed.
	System string `json:"system,omitempty"`
	// MCP lists the MCP servers the run started, with a hash of each of
	// their tools' definitions, to notice when a tool changed or vanished.
	MCP []MCPServerData `json:"mcp,omitempty"`
	// Sandbox names the sandbox layers bash commands ran in, what was
	// missing and why, or "off".
	Sandbox string `json:"sandbox,omitempty"`
	// Spec is what the run was started with; resumes continue with it.
	// Sessions from before it was recorded have only Model and Mode.
	Spec *RunSpec `json:"spec,omitempty"`
}

// MCPServerData is one MCP server of a run: its name, transport and where
// its config came from, and its tools (decode's name to a hash of the
// definition the model saw).
type MCPServerData struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"`
	Source    string            `json:"source,omitempty"`
	Tools     map[string]string `json:"tools"`
}

// UserData is a user message.
type UserData struct {
	Text string `json:"text"`
	// Attachments are the files attached to the message with -f.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// AssistantData is one complete model response.
type AssistantData struct {
	Message llm.Message    `json:"message"`
	Usage   llm.Usage      `json:"usage"`
	Stop    llm.StopReason `json:"stop"`
	Model   string         `json:"model,omitempty"`
	// Ms is the wall time of the model call in milliseconds.
	Ms int64 `json:"ms,omitempty"`
	// Cost is the response's price in USD from decode's price table; 0
	// when the model's price is unknown.
	Cost float64 `json:"cost,omitempty"`
}

// ToolCallData is written before a tool runs, after the gate decided.
type ToolCallData struct {
	CallID   string          `json:"call_id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
	Decision string          `json:"decision"` // allow, deny
	Reason   string          `json:"reason,omitempty"`
}

// ToolResultData is written after a tool ran (or was refused).
type ToolResultData struct {
	llm.ToolResult
	Ms int64 `json:"ms,omitempty"`
	// Seen lists the files the call read or wrote, as they were then, so
	// that a resumed run knows which files were read.
	Seen []FileSeen `json:"seen,omitempty"`
}

// FileSeen is one version of a file a tool read or wrote.
type FileSeen struct {
	Path string    `json:"path"`
	Mod  time.Time `json:"mod"`
	Size int64     `json:"size"`
}

// Kinds of approval_request: what a paused run waits for.
const (
	WaitApproval = "approval" // a person's approval of a tool call
	WaitQuestion = "question" // a person's answer to ask_user
	WaitTime     = "time"     // a point in time (a long sleep)
)

// ApprovalRequestData records a tool call a headless run paused on. Hash
// binds a decision to the exact call: sha256 of the tool name and its
// canonical arguments.
type ApprovalRequestData struct {
	CallID   string          `json:"call_id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
	Kind     string          `json:"kind"` // approval, question, time
	Reason   string          `json:"reason,omitempty"`
	Hash     string          `json:"hash"`
	Question string          `json:"question,omitempty"`
	Until    *time.Time      `json:"until,omitempty"`
}

// ApprovalData decides an approval_request (decode approve, deny, answer).
type ApprovalData struct {
	CallID   string `json:"call_id"`
	Hash     string `json:"hash"`
	Decision string `json:"decision"` // allow, deny, answer
	Reason   string `json:"reason,omitempty"`
	Answer   string `json:"answer,omitempty"`
	// MAC authenticates the decision with the deciding user's approval key
	// (HMAC-SHA256 over the session, the call, the tool, its canonical
	// arguments, the decision and its text; see secrets.Claim).
	MAC string `json:"mac,omitempty"`
	// SSHSig, with Signer (an email in git's allowed signers file), is the
	// same claim signed with the user's SSH key, for decisions made on
	// another machine (approval_signing = "ssh").
	SSHSig string `json:"ssh_sig,omitempty"`
	Signer string `json:"signer,omitempty"`
}

// LimitData records that a limit stopped the run.
type LimitData struct {
	Limit string `json:"limit"` // turns, steps, cost, time
	Value string `json:"value"`
}

// ErrorData records a failure that ended the run.
type ErrorData struct {
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

// InterruptedData records that the run was cancelled.
type InterruptedData struct {
	Reason string `json:"reason"`
}

// EndData closes a run.
type EndData struct {
	Status Status    `json:"status"` // done, error, limit, interrupted, paused
	Exit   int       `json:"exit"`
	Usage  llm.Usage `json:"usage"`
	Turns  int       `json:"turns"`
	Ms     int64     `json:"ms"`
}

// PlanData is a plan of numbered steps: the answer of decode plan, or, in a
// run that carries a plan out, the plan it follows (From says where it came
// from) and any re-plan of its remaining steps (Replan).
type PlanData struct {
	// Task is what the plan is for.
	Task  string     `json:"task,omitempty"`
	Steps []PlanStep `json:"steps"`
	// From names the plan's source in a run: "session ID" or "file PATH".
	From string `json:"from,omitempty"`
	// Replan is the number of the failed step whose re-plan gave these
	// steps; the steps before it are kept as they were. 0 for a first plan.
	Replan int `json:"replan,omitempty"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	N      int      `json:"n"`
	Text   string   `json:"text"`
	Files  []string `json:"files,omitempty"`
	Verify string   `json:"verify,omitempty"`
}

// PlanStepData records how one step of a plan went.
type PlanStepData struct {
	N      int    `json:"n"`
	Status string `json:"status"` // done, failed
	Note   string `json:"note,omitempty"`
}

// toolImage is a tool result's image as a session line holds it: its bytes
// in hex, like an attachment's (see HexBytes), so redacting the line can
// never break them. Data is the base64 form sessions written before hex
// held; it is read, never written.
type toolImage struct {
	MIME string   `json:"mime"`
	Hex  HexBytes `json:"hex,omitempty"`
	Data []byte   `json:"data,omitempty"`
}

// toolResultJSON is ToolResultData with its images as toolImage: the outer
// Images field hides the embedded llm.ToolResult's in encoding/json.
type toolResultJSON struct {
	plainToolResult
	Images []toolImage `json:"images,omitempty"`
}

type plainToolResult ToolResultData

// MarshalJSON writes the result with its images in hex.
func (d ToolResultData) MarshalJSON() ([]byte, error) {
	out := toolResultJSON{plainToolResult: plainToolResult(d)}
	for _, im := range d.Images {
		out.Images = append(out.Images, toolImage{MIME: im.MIME, Hex: HexBytes(im.Data)})
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads images in hex, or in the base64 of older sessions.
func (d *ToolResultData) UnmarshalJSON(b []byte) error {
	var in toolResultJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*d = ToolResultData(in.plainToolResult)
	d.Images = nil
	for _, im := range in.Images {
		data := []byte(im.Hex)
		if data == nil {
			data = im.Data
		}
		d.Images = append(d.Images, llm.Image{MIME: im.MIME, Data: data})
	}
	return nil
}
