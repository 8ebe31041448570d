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
