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
}

func TestErrorLineHasOneDecodePrefix(t *testing.T) {
	err := &llm.Error{Kind: llm.ErrConfig, Provider: "decode", Msg: "no model configured"}
	assert.Equal(t, "config: no model configured", errorLine(err), "Main adds the one \"decode: \"")
}
