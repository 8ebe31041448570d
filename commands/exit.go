package commands

import (
	"context"
	"errors"
	"fmt"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
)

// Exit codes, documented in the README and kept stable.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitPaused      = 3
	ExitProvider    = 4
	ExitLimit       = 5
	ExitConflict    = 6
	ExitInterrupted = 130
)

// UsageError is a mistake on the command line (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to decode's documented exit code. Only Main uses it.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, agent.ErrPaused):
		return ExitPaused
	case errors.Is(err, agent.ErrLimit), errors.Is(err, context.DeadlineExceeded):
		return ExitLimit
	case errors.Is(err, session.ErrConflict):
		return ExitConflict
	case llm.AsError(err) != nil:
		return ExitProvider
	default:
		return ExitError
	}
}
