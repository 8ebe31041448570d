package commands

import (
	"errors"
	"fmt"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
)

// Exit codes, documented in the README and kept stable; the session's end
// entries record the same.
const (
	ExitOK          = session.ExitOK
	ExitError       = session.ExitError
	ExitUsage       = session.ExitUsage
	ExitPaused      = session.ExitPaused
	ExitProvider    = session.ExitProvider
	ExitLimit       = session.ExitLimit
	ExitConflict    = session.ExitConflict
	ExitInterrupted = session.ExitInterrupted
)

// UsageError is a mistake on the command line (exit 2).
type UsageError struct {
	Msg string
	// Flags is set for a flag the command line could not parse, which
	// fails before any command (and its --json output) starts.
	Flags bool
}

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to decode's documented exit code. Only Main uses it.
func ExitCode(err error) int {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	st := agent.StatusOf(err)
	if st == session.StatusError && errors.Is(err, session.ErrConflict) {
		return ExitConflict
	}
	return st.ExitCode(llm.AsError(err) != nil)
}
