package session

import (
	"encoding/json"

	"decode/agent/llm"
)

// Compaction strategies: how a compaction made the context smaller.
const (
	// CompactSummary: the model summarised the folded entries.
	CompactSummary = "summary"
	// CompactElide: summarising failed; old tool outputs were replaced by
	// a pointer to their entry.
	CompactElide = "elide"
	// CompactFewer: eliding was not enough; fewer recent entries were kept.
	CompactFewer = "fewer"
)

// CompactionData folds the entries before FirstKept out of the model's
// context. The raw entries stay in the log; the context is rebuilt from
// the last compaction as the system prompt, State, Summary, then the
// entries from FirstKept on, with the tool results listed in Elided
// replaced by a one-line pointer.
type CompactionData struct {
	// Trigger says what started it: threshold (the estimate passed the
	// threshold before a request), overflow (the provider answered that the
	// context is too long), manual (decode compact).
	Trigger string `json:"trigger"`
	// Reason is the provider's answer that started an overflow compaction.
	Reason string `json:"reason,omitempty"`
	// Strategy is summary, elide or fewer (see the Compact constants).
	Strategy string `json:"strategy"`
	// Summary is the model's summary of what was folded, including what an
	// earlier summary said; empty when the model did not summarise.
	Summary string `json:"summary,omitempty"`
	// FirstKept is the id of the first entry kept verbatim; 0 when none
	// of the entries before the compaction is kept.
	FirstKept int `json:"first_kept"`
	// Elided lists the tool_result entries kept in place but shown to the
	// model as a pointer to the log.
	Elided []int `json:"elided,omitempty"`
	// TokensBefore and TokensAfter are the context's estimated size.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Folded counts the entries no longer in the context, and FoldedAssistant
	// the model responses among them over the whole session (a scripted
	// model keeps its place with it).
	Folded          int `json:"folded"`
	FoldedAssistant int `json:"folded_assistant"`
	// Focus is what decode compact --focus asked the summary to keep.
	Focus string `json:"focus,omitempty"`
	// Failed says why the strategies before Strategy were not used.
	Failed []string `json:"failed,omitempty"`
	// Model, Usage and Cost describe the summarising call, when one was made
	// (budgets count it).
	Model string    `json:"model,omitempty"`
	Usage llm.Usage `json:"usage"`
	Cost  float64   `json:"cost,omitempty"`
	// State is what decode itself carries across the compaction, verbatim.
	State StateRecord `json:"state"`
	// Spent is what the current task had spent when the compaction was
	// written (this compaction's call included), so that limits hold for a
	// resume that reads the session from its last compaction on.
	Spent *Spent `json:"spent,omitempty"`
}

// Spent is a task's budget used: model requests, tool-call steps, cost in
// USD, and the wall time of its runs that had ended.
type Spent struct {
	Turns int     `json:"turns"`
	Steps int     `json:"steps"`
	Cost  float64 `json:"cost,omitempty"`
	Ms    int64   `json:"ms"`
	// Manual is set for decode compact, which is not part of a run.
	Manual bool `json:"manual,omitempty"`
}

// StateRecord is what must survive a compaction, built by decode from the
// log, never by the model.
type StateRecord struct {
	// Task is the session's first prompt.
	Task StateMessage `json:"task"`
	// Messages are the later user and steering messages, in order: the
	// newest in full, older ones past a budget by reference.
	Messages []StateMessage `json:"messages,omitempty"`
	// Mode and Rules are the permission mode and gate rules in force.
	Mode  string   `json:"mode,omitempty"`
	Rules []string `json:"rules,omitempty"`
	// Plan is the plan being carried out, and Step its current step.
	Plan *PlanData `json:"plan,omitempty"`
	Step int       `json:"step,omitempty"`
	// Todo is the latest todo list, as the todo tool rendered it.
	Todo string `json:"todo,omitempty"`
	// Read and Modified are the files read and changed by file tools.
	Read     []string `json:"read,omitempty"`
	Modified []string `json:"modified,omitempty"`
	// Failed are tool calls that failed, with their errors (the latest ones).
	Failed []FailedCall `json:"failed,omitempty"`
}

// StateMessage is a user or steering message in a state record. Text is
// empty when the message is given by reference: its entry id and its
// first line.
type StateMessage struct {
	ID   int    `json:"id"`
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// Line is the first line of a message given by reference.
	Line  string `json:"line,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
}

// FailedCall is a tool call that failed.
type FailedCall struct {
	ID    int             `json:"id"` // the tool_result entry
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args,omitempty"`
	Error string          `json:"error"`
}
