package commands

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
)

func TestExitCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitError},
		{usageErrorf("bad flag"), ExitUsage},
		{fmt.Errorf("run: %w", context.Canceled), ExitInterrupted},
		{&agent.LimitError{Limit: "turns", Value: "3"}, ExitLimit},
		{fmt.Errorf("run: %w", &agent.PausedError{}), ExitPaused},
		{fmt.Errorf("x: %w", session.ErrConflict), ExitConflict},
		{fmt.Errorf("x: %w", &llm.Error{Kind: llm.ErrAuth}), ExitProvider},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ExitCode(c.err), "exit code for %v", c.err)
	}
}

func TestErrorLineSaysWhatToDo(t *testing.T) {
	cases := map[llm.ErrorKind]string{
		llm.ErrAuth:      "check the API key",
		llm.ErrQuota:     "billing",
		llm.ErrRateLimit: "try again later",
		llm.ErrTruncated: "decode resume continues",
		llm.ErrMalformed: "could not read",
		llm.ErrNotFound:  "decode models",
	}
	for kind, want := range cases {
		line := errorLine(fmt.Errorf("run: %w", &llm.Error{Kind: kind, Provider: "openai", Msg: "boom\nsecond line"}))
		assert.Contains(t, line, want, "hint for %s", kind)
		assert.NotContains(t, line, "\n", "one line for %s", kind)
	}
	assert.Equal(t, "plain failure", errorLine(errors.New("plain failure")), "other errors are left as they are")
}

// TestErrorLineAddsCLIHints: the loop's pauses and limits name no flags or
// commands; the CLI adds them.
func TestErrorLineAddsCLIHints(t *testing.T) {
	le := &agent.LimitError{Limit: "cost", Value: "$0.6000 spent of $0.50"}
	assert.NotContains(t, le.Error(), "--max-cost", "the loop's error names no flag")
	assert.Equal(t, "plan step 1: cost limit reached ($0.6000 spent of $0.50; raise --max-cost)",
		errorLine(fmt.Errorf("plan step 1: %w", le)))
	pe := &agent.PausedError{Waits: []session.ApprovalRequestData{
		{Name: "bash", Args: []byte(`{"command":"rm x"}`), Kind: session.WaitApproval},
		{Name: "ask_user", Kind: session.WaitQuestion, Question: "which?"},
	}}
	assert.NotContains(t, pe.Error(), "decode approve")
	assert.Equal(t, `paused: bash rm x needs approval; ask_user asks "which?" (decode approve @ && decode answer @ ANSWER && decode resume @; to refuse: decode deny @ REASON && decode resume @)`,
		errorLine(pe))
	assert.Equal(t, `paused: bash rm x needs approval; ask_user asks "which?" (decode approve 1m8r0abc && decode answer 1m8r0abc ANSWER && decode resume 1m8r0abc; to refuse: decode deny 1m8r0abc REASON && decode resume 1m8r0abc)`,
		errorLine(&pausedSession{ID: "1m8r0abc", err: pe}), "a pause in a recorded session names it")
	assert.Equal(t, 130, session.StatusInterrupted.ExitCode(false))
	assert.Equal(t, ExitProvider, session.StatusError.ExitCode(true))

	cf := &agent.ContextFullError{Session: "1m8r0abc", Err: &llm.Error{Kind: llm.ErrContextTooLong, Provider: "openai:gpt-4.1", Msg: "the conversation does not fit the model's context window: too large"}}
	assert.NotContains(t, cf.Error(), "decode compact", "the loop's error names no command")
	line := errorLine(fmt.Errorf("run: %w", cf))
	assert.Equal(t, "run: openai:gpt-4.1: context_too_long: the conversation does not fit the model's context window: too large; "+
		"compact it yourself with decode compact 1m8r0abc --focus TEXT (what the summary must keep), or branch it from an earlier entry with decode fork 1m8r0abc@N", line,
		"the session's own commands, and no second, generic hint")
	assert.Equal(t, ExitProvider, ExitCode(cf), "a provider error")
	cf.Session = ""
	assert.Contains(t, errorLine(cf), "decode fork SESSION@N", "a run with no session names the placeholder")

	assert.NotContains(t, agent.ErrOpenCalls.Error(), "decode ")
	assert.Equal(t, "compact 1m8r0abc: "+agent.ErrOpenCalls.Error()+": continue it with decode resume, or decide with decode approve or deny, before compacting",
		errorLine(fmt.Errorf("compact 1m8r0abc: %w", agent.ErrOpenCalls)))
}

func TestErrorLineHasOneDecodePrefix(t *testing.T) {
	err := &llm.Error{Kind: llm.ErrConfig, Provider: "decode", Msg: "no model configured"}
	assert.Equal(t, "config: no model configured", errorLine(err), "Main adds the one \"decode: \"")
}
