package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

const verdictFile = `{"type":"object","properties":{"breaking":{"type":"boolean"},"why":{"type":"string"}},"required":["breaking","why"]}`

func mustSchema(t *testing.T, text string) *ResponseSchema {
	t.Helper()
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(text), &s))
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	return NewResponseSchema("schema.json", json.RawMessage(text), rs)
}

// priced prices a response at a thousandth of a dollar per token, so each
// say() response (12 tokens) costs $0.012.
func priced(_ string, u llm.Usage) float64 { return float64(u.Input+u.Output) / 1000 }

// turnsOptions wires a run of the fake model with no tools.
func turnsOptions(m *fakeModel, log Log) Options {
	return Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: log, Cost: priced}
}

// assertSummed checks that out adds up n requests of say()'s usage.
func assertSummed(t *testing.T, out Outcome, n int) {
	t.Helper()
	assert.Equal(t, n, out.Turns, "every request counted")
	assert.Equal(t, llm.Usage{Input: 10 * n, Output: 2 * n}, out.Usage, "the usage of every request")
	assert.InDelta(t, 0.012*float64(n), out.Cost, 1e-9, "the cost of every request")
}

func TestSchemaRetrySumsEveryRequest(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("It breaks the API."), say(`{"why": "renamed", "breaking": true}`)}}
	log := &MemoryLog{}
	var warned []string
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{
		Schema: mustSchema(t, verdictFile), Progress: Progress{Warn: func(s string) { warned = append(warned, s) }},
	}, "does it break?")
	require.NoError(t, err)
	assert.Equal(t, `{"breaking":true,"why":"renamed"}`, out.Text, "the valid answer, canonical")
	assertSummed(t, out, 2)
	assert.Equal(t, session.StatusDone, out.Status)
	require.Len(t, warned, 1)
	assert.Contains(t, warned[0], "not valid against schema.json")
	require.Len(t, m.reqs, 2)
	last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	assert.Contains(t, last.Text, "not valid against the JSON Schema", "the retry says what is wrong")
}

func TestSchemaTwiceInvalidClosesTheSession(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("no"), say(`{"breaking": "yes"}`)}}
	log := &MemoryLog{}
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{Schema: mustSchema(t, verdictFile)}, "go")
	var se *SchemaError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "schema.json", se.Path)
	assertSummed(t, out, 2)
	assert.Equal(t, session.StatusError, out.Status)
	es := log.Entries()
	require.GreaterOrEqual(t, len(es), 2)
	assert.Equal(t, session.TypeError, es[len(es)-2].Type, "the schema failure is recorded")
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type, "and the session closed after it")
	var end session.EndData
	require.NoError(t, es[len(es)-1].Decode(&end))
	assert.Equal(t, session.StatusError, end.Status)
	assert.Zero(t, end.Usage, "the closing end entry adds nothing to the totals")
}

func TestRememberCallIsCounted(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("Tests pass."), say("Run make check to test this project.")}}
	path := filepath.Join(t.TempDir(), "MEMORY.md")
	var said []string
	out, err := RunTurns(context.Background(), turnsOptions(m, &MemoryLog{}), Turns{
		Remember: &Remember{Path: path}, Progress: Progress{Say: func(s string) { said = append(said, s) }},
	}, "run the tests")
	require.NoError(t, err)
	assert.Equal(t, "Tests pass.", out.Text, "the answer, not the remembered sentence")
	assertSummed(t, out, 2)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Run make check to test this project.")
	assert.Equal(t, []string{"remembered in " + path + ": Run make check to test this project."}, said)
	require.Len(t, m.reqs, 2)
	assert.Empty(t, m.reqs[1].Tools, "the remember call offers no tools")
}

func TestRememberNotAfterAFailure(t *testing.T) {
	m := &fakeModel{responses: []llm.Response{say("no"), say("Remember this.")}}
	path := filepath.Join(t.TempDir(), "MEMORY.md")
	_, err := RunTurns(context.Background(), turnsOptions(m, &MemoryLog{}), Turns{
		Schema: mustSchema(t, verdictFile), Remember: &Remember{Path: path},
	}, "go")
	require.Error(t, err, "the retry has no valid answer")
	assert.NoFileExists(t, path, "a failed command remembers nothing")
}

func TestSchemaCheck(t *testing.T) {
	s := mustSchema(t, verdictFile)
	tests := []struct {
		name, answer, want, err string
	}{
		{name: "plain", answer: `{"why": "renamed", "breaking": true}`, want: `{"breaking":true,"why":"renamed"}`},
		{name: "fenced", answer: "```json\n{\"breaking\": false, \"why\": \"a <b> & c\"}\n```\n", want: `{"breaking":false,"why":"a <b> & c"}`},
		{name: "prose around it", answer: "Here it is:\n```json\n{\"breaking\": false, \"why\": \"x\"}\n```\nHope that helps.", want: `{"breaking":false,"why":"x"}`},
		{name: "numbers kept exact", answer: `{"breaking": true, "why": "x", "n": 12345678901234567890}`, want: `{"breaking":true,"n":12345678901234567890,"why":"x"}`},
		{name: "not JSON", answer: "It breaks the API.", err: "not JSON"},
		{name: "wrong type", answer: `{"breaking": "yes", "why": "x"}`, err: "breaking"},
		{name: "missing property", answer: `{"breaking": true}`, err: "why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Check(tt.answer)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRememberMessagesKeepTurnsWithoutToolBlocks(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)}
	entries := []session.Entry{
		session.NewEntry(session.TypeUser, session.UserData{Text: "fix a.go"}, ""),
		session.NewEntry(session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Text: "Looking.", Calls: []llm.ToolCall{call},
			Native: &llm.Native{Provider: "gemini", Data: json.RawMessage(`{}`)}}}, ""),
		session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{CallID: "c1", Name: "read", Content: strings.Repeat("x", 5000)}}, ""),
		session.NewEntry(session.TypeAssistant, session.AssistantData{Message: llm.Message{Role: llm.RoleAssistant, Text: "Fixed."}}, ""),
	}

	msgs := rememberMessages(entries)

	var roles []llm.Role
	for _, m := range msgs {
		roles = append(roles, m.Role)
		assert.Empty(t, m.Calls)
		assert.Empty(t, m.Results)
		assert.Nil(t, m.Native, "provider state of tool calls is not replayed")
	}
	assert.Equal(t, []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleUser, llm.RoleAssistant, llm.RoleUser}, roles,
		"the assistant turns are kept, so the script model answers the next response")
	assert.Contains(t, msgs[1].Text, `[called read a.go]`)
	assert.Contains(t, msgs[2].Text, "[result of read: ")
	assert.Less(t, len(msgs[2].Text), 400, "tool output is clipped")
	assert.Contains(t, msgs[4].Text, "What one sentence should go into MEMORY.md?")
}

func TestRememberSentence(t *testing.T) {
	for answer, want := range map[string]string{
		"Run go test ./... from the repo root.":                   "Run go test ./... from the repo root.",
		"\n- \"Integration tests need DOCKER_HOST set.\"\n\nmore": "Integration tests need DOCKER_HOST set.",
		"NONE":   "",
		"None.":  "",
		"  \n  ": "",
	} {
		assert.Equal(t, want, rememberSentence(answer), "%q", answer)
	}
}

func TestReplaySumsEveryTurn(t *testing.T) {
	prompts := []session.Entry{
		session.NewEntry(session.TypeUser, session.UserData{Text: "first"}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "second"}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "third"}, ""),
	}
	log := &MemoryLog{}
	require.NoError(t, log.Append(context.Background(), prompts[0])) // the branch holds the first prompt
	m := &fakeModel{responses: []llm.Response{say("One."), say("Two."), say("Three.")}}
	turns := 0
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{
		Driver: Replay{Prompts: prompts}, Progress: Progress{Turn: func() { turns++ }},
	}, "")
	require.NoError(t, err)
	assert.Equal(t, "Three.", out.Text, "the last turn's answer")
	assertSummed(t, out, 3)
	assert.Equal(t, 2, turns, "a line break before each turn after the first")
	var users []string
	for _, e := range log.Entries() {
		if e.Type == session.TypeUser {
			var d session.UserData
			require.NoError(t, e.Decode(&d))
			users = append(users, d.Text)
		}
	}
	assert.Equal(t, []string{"first", "second", "third"}, users, "the first prompt is not sent twice")
}

func TestReplayStopsAtAFailedTurn(t *testing.T) {
	prompts := []session.Entry{
		session.NewEntry(session.TypeUser, session.UserData{Text: "first"}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "second"}, ""),
	}
	log := &MemoryLog{}
	require.NoError(t, log.Append(context.Background(), prompts[0]))
	m := &fakeModel{responses: []llm.Response{say("One.")}} // no answer for the second turn
	out, err := RunTurns(context.Background(), turnsOptions(m, log), Turns{Driver: Replay{Prompts: prompts}}, "")
	require.Error(t, err)
	assert.Equal(t, 2, out.Turns, "the failed request counts too")
	assert.Equal(t, llm.Usage{Input: 10, Output: 2}, out.Usage, "the answered turn's usage")
	assert.InDelta(t, 0.012, out.Cost, 1e-9, "and cost")
	assert.Equal(t, session.StatusError, out.Status)
}
