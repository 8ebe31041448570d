package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
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

// StorageError reports that the store could not be written or read for a
// cause outside decode: the disk is full, the file system is read-only, or
// a permission is missing. Its message names the cause and what to do.
type StorageError struct {
	Op   string // what was being done, e.g. "write object"
	Path string
	Err  error // the system error
}

func (e *StorageError) Error() string {
	cause, hint := "", ""
	switch {
	case errors.Is(e.Err, syscall.ENOSPC), errors.Is(e.Err, syscall.EDQUOT):
		cause, hint = "no space left on device", "free some space (or raise the quota) on the disk holding it"
	case errors.Is(e.Err, syscall.EROFS):
		cause, hint = "read-only file system", "remount it read-write, or run decode where the session store is writable (DECODE_STORE outside a repository)"
	case errors.Is(e.Err, fs.ErrPermission):
		cause, hint = "permission denied", "give your user write permission on it (check its owner with ls -l)"
	default:
		return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("%s %s: %s; %s, then run decode resume to continue (what was recorded before is kept)", e.Op, e.Path, cause, hint)
}

func (e *StorageError) Unwrap() error { return e.Err }

// storageErr wraps err as a *StorageError when its cause is one the user
// must fix (no space, read-only, permission); other errors pass through.
func storageErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return &StorageError{Op: op, Path: path, Err: err}
	}
	return err
}

// Retryable reports whether an Append that failed with err may succeed if
// tried again soon with the same entries: a race with git's own
// maintenance (a ref lock held longer than the wait, an object directory
// removed under us). A full disk, a read-only store, a missing permission,
// a ref that moved and a cancelled context are not.
func Retryable(err error) bool {
	var se *StorageError
	switch {
	case err == nil, errors.As(err, &se), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, errRefMoved):
		return false
	}
	return errors.Is(err, ErrConflict) || errors.Is(err, fs.ErrNotExist)
}

// errRefMoved reports that a ref is not at the value its writer expected:
// another writer moved it, which waiting does not change.
var errRefMoved = errors.New("the ref moved")
