package agent

import "decode/agent/llm"

// Event types a run reports to its sink.
const (
	EventText       = "text"        // a delta of answer text
	EventToolCall   = "tool_call"   // a call and the gate's decision, before it runs
	EventToolResult = "tool_result" // a call's result
	EventUsage      = "usage"       // token usage of one model response
	EventRetry      = "retry"       // the model request is being sent again
	EventWarning    = "warning"     // something a person should know
	// EventApprovalRequest says a call waits for a person's decision
	// (Call, Summary, Reason): a headless run pauses on it.
	EventApprovalRequest = "approval_request"
	// EventSteer says a steering message (Text) queued with decode steer
	// was taken into the conversation.
	EventSteer = "steer"
	// EventCompaction says the context was compacted (Compaction).
	EventCompaction = "compaction"
)

// Event is one thing that happened during a run.
type Event struct {
	Type     string
	Text     string
	Call     *llm.ToolCall
	Summary  string // the call's key argument, for one-line display
	Decision string // allow or deny (after any approval)
	Reason   string
	Result   *llm.ToolResult
	Note     string // the tool's one-line outcome
	Usage    *llm.Usage
	Err      error
	Attempt  int
	Ms       int64
	// Compaction describes a compaction (EventCompaction).
	Compaction *Compaction
}
