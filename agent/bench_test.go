package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// BenchmarkMessages measures rebuilding the model context of a session of
// 10,000 entries, what a resume pays before its first request.
func BenchmarkMessages(b *testing.B) {
	log := &MemoryLog{}
	ctx := context.Background()
	_ = log.Append(ctx, session.NewEntry(session.TypeUser, session.UserData{Text: "go"}, ""))
	for i := 0; len(log.Entries()) < 10000; i++ {
		id := fmt.Sprintf("c%d", i)
		_ = log.Append(ctx,
			session.NewEntry(session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant,
				Calls: []llm.ToolCall{{ID: id, Name: "glob", Args: json.RawMessage(`{"pattern":"*.go"}`)}}}}, ""),
			session.NewEntry(session.TypeToolCall, session.ToolCallData{CallID: id, Name: "glob", Decision: "allow"}, ""),
			session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: id, Name: "glob", Content: "a.go\nb.go"}}, ""))
	}
	es := log.Entries()
	b.ResetTimer()
	for b.Loop() {
		if len(Messages(es)) == 0 {
			b.Fatal("no messages")
		}
	}
}

// BenchmarkStep measures the loop's own work per step (request building,
// gating, recording), with a model, tool and log that cost nothing.
func BenchmarkStep(b *testing.B) {
	steps := b.N
	resp := say("", call("1", "ls", `{"path":"."}`))
	m := &fakeModel{}
	for range steps {
		m.responses = append(m.responses, resp)
	}
	m.responses = append(m.responses, say("done"))
	ls := &fakeTool{name: "ls", readOnly: true, out: "a.go"}
	b.ResetTimer()
	_, err := Run(context.Background(), Options{Model: m, Tools: tools.NewRegistry(ls), Gate: allowAll, Log: &MemoryLog{}}, "go")
	if err != nil {
		b.Fatal(err)
	}
}
