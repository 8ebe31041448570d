package script

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

func TestPlaysResponsesByAssistantCount(t *testing.T) {
	m, err := Parse("t.json", []byte(`{"responses":[
		{"text":"looking at it","calls":[{"name":"read","args":{"path":"a.go"}},{"name":"bash","raw_args":"{not json"}]},
		{"expect":"package a","text":"done"}]}`))
	require.NoError(t, err)

	var texts []string
	var calls []llm.ToolCall
	var resp *llm.Response
	for ev := range m.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}) {
		switch ev.Kind {
		case llm.EventText:
			texts = append(texts, ev.Text)
		case llm.EventToolCall:
			calls = append(calls, *ev.Call)
		case llm.EventDone:
			resp = ev.Response
		case llm.EventError:
			t.Fatalf("unexpected error: %v", ev.Err)
		}
	}
	assert.Equal(t, "looking at it", strings.Join(texts, ""), "deltas concatenate to the text")
	assert.Greater(t, len(texts), 1, "text is streamed in pieces")
	require.Len(t, calls, 2)
	assert.JSONEq(t, `{"path":"a.go"}`, string(calls[0].Args))
	assert.Equal(t, "{not json", string(calls[1].Args), "raw args are sent verbatim")
	require.NotNil(t, resp)
	assert.Equal(t, llm.StopToolUse, resp.Stop)
	assert.Positive(t, resp.Usage.Input, "usage is estimated")

	// The second request carries one assistant message: the second response plays.
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "go"},
		resp.Message,
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: calls[0].ID, Content: "package a"}}},
	}}
	r2, err := llm.Collect(m.Stream(context.Background(), req))
	require.NoError(t, err)
	assert.Equal(t, "done", r2.Message.Text)
	assert.Equal(t, llm.StopEnd, r2.Stop)
}

func TestExpectMismatchAndExhaustion(t *testing.T) {
	m, err := Parse("t.json", []byte(`{"responses":[{"expect":"magic","text":"x"}]}`))
	require.NoError(t, err)
	_, err = llm.Collect(m.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "plain"}}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `expects "magic"`)

	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "magic"}, {Role: llm.RoleAssistant, Text: "x"}, {Role: llm.RoleUser, Text: "more"}}}
	_, err = llm.Collect(m.Stream(context.Background(), req))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has 1 responses")
}

func TestScriptedError(t *testing.T) {
	m, err := Parse("t.json", []byte(`{"responses":[{"error":{"kind":"auth","message":"bad key","status":401}}]}`))
	require.NoError(t, err)
	_, err = llm.Collect(m.Stream(context.Background(), llm.Request{}))
	e := llm.AsError(err)
	require.NotNil(t, e, "a scripted error is an *llm.Error")
	assert.Equal(t, llm.ErrAuth, e.Kind)
	assert.Equal(t, 401, e.Status)
	assert.False(t, e.Retryable())
}

func TestInvalidScripts(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      `{`,
		"unknown field": `{"responses":[{"txt":"x"}]}`,
		"empty":         `{"responses":[]}`,
		"nameless call": `{"responses":[{"calls":[{"args":{}}]}]}`,
	} {
		_, err := Parse("bad.json", []byte(body))
		assert.Error(t, err, name)
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDelayHonoursCancellation(t *testing.T) {
	m, err := Parse("t.json", []byte(`{"responses":[{"delay_ms":60000,"text":"late"}]}`))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = llm.Collect(m.Stream(ctx, llm.Request{}))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSummariesAndCompactedRequests(t *testing.T) {
	m, err := Parse("t.json", []byte(`{"responses":[{"text":"one"},{"text":"two"},{"text":"three"}],
		"summaries":[{"text":"first summary"},{"text":"second summary"}]}`))
	require.NoError(t, err)
	sum := llm.Request{Purpose: llm.PurposeSummary, Messages: []llm.Message{{Role: llm.RoleUser, Text: "summarise"}}}
	for _, want := range []string{"first summary", "second summary", "second summary"} {
		r, err := llm.Collect(m.Stream(context.Background(), sum))
		require.NoError(t, err)
		assert.Equal(t, want, r.Message.Text, "summaries play in order, the last repeating")
	}
	// A compacted request carries one assistant message but two were folded:
	// the fourth response would play; this script has three.
	req := llm.Request{Folded: 1, Messages: []llm.Message{{Role: llm.RoleUser, Text: "state"}, {Role: llm.RoleAssistant, Text: "two"}, {Role: llm.RoleUser, Text: "go on"}}}
	r, err := llm.Collect(m.Stream(context.Background(), req))
	require.NoError(t, err)
	assert.Equal(t, "three", r.Message.Text, "the script keeps its place across a compaction")

	// Without summaries, the model writes a short one of its own.
	plain, err := Parse("p.json", []byte(`{"responses":[{"text":"x"}]}`))
	require.NoError(t, err)
	r, err = llm.Collect(plain.Stream(context.Background(), llm.Request{Purpose: llm.PurposeSummary,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "[assistant #3]\n→ read {}\n→ grep {}\n"}}}))
	require.NoError(t, err)
	assert.Contains(t, r.Message.Text, "made 2 tool calls")
}
