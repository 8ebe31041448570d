package session

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConflict reports that another writer holds the session or that its ref
// moved under us. decode exits with code 6 on it.
var ErrConflict = errors.New("session conflict")

// AmbiguousError reports a session reference that matches several sessions.
type AmbiguousError struct {
	Ref        string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("session %q is ambiguous: %s", e.Ref, strings.Join(e.Candidates, ", "))
}

// NotFoundError reports a session reference that matches no session.
// Candidates holds the newest sessions as a hint (possibly none).
type NotFoundError struct {
	Ref        string
	Candidates []string
}

func (e *NotFoundError) Error() string {
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("session %q not found: there are no sessions", e.Ref)
	}
	return fmt.Sprintf("session %q not found; newest sessions: %s", e.Ref, strings.Join(e.Candidates, ", "))
}
