package session

// Status is how a session stands, the one vocabulary of decode log, the end
// entry, the run's outcome and the JSON end event.
type Status string

// Statuses. An end entry records how a run ended (done, paused, limit,
// interrupted, error); the others are read from the log: a session whose
// last entry is not an end is running, paused (an approval_request), forked
// (a fork or replay that has not run yet), or crashed when the process
// writing it is gone.
const (
	StatusDone        Status = "done"
	StatusPaused      Status = "paused"
	StatusLimit       Status = "limit"
	StatusInterrupted Status = "interrupted"
	StatusError       Status = "error"
	StatusRunning     Status = "running"
	StatusForked      Status = "forked"
	StatusCrashed     Status = "crashed"
)

// Exit codes an end entry records, as decode documents them: the status of
// the run, and for an error whether the provider failed.
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

// ExitCode is the documented exit code of a run that ended with status st;
// provider says an error was the provider's failure.
func (st Status) ExitCode(provider bool) int {
	switch st {
	case StatusDone:
		return ExitOK
	case StatusPaused:
		return ExitPaused
	case StatusLimit:
		return ExitLimit
	case StatusInterrupted:
		return ExitInterrupted
	}
	if provider {
		return ExitProvider
	}
	return ExitError
}

// StatusOfExit names how a command ended from its exit code, in the words
// of the end entry.
func StatusOfExit(code int) Status {
	switch code {
	case ExitOK:
		return StatusDone
	case ExitPaused:
		return StatusPaused
	case ExitLimit:
		return StatusLimit
	case ExitInterrupted:
		return StatusInterrupted
	}
	return StatusError
}
