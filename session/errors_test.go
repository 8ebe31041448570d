package session

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A storage failure names its cause and what to do; only races with git's
// maintenance are retried.
func TestStorageErrorNamesTheCause(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOSPC: "no space left on device; free some space",
		syscall.EDQUOT: "no space left on device; free some space (or raise the quota)",
		syscall.EROFS:  "read-only file system; remount it read-write",
		syscall.EACCES: "permission denied; give your user write permission",
		syscall.EPERM:  "permission denied; give your user write permission",
	} {
		err := fmt.Errorf("append to x: %w", storageErr("write", "/repo/.git/objects/ab/tmp_obj_1", &fs.PathError{Op: "write", Path: "p", Err: errno}))
		assert.Contains(t, err.Error(), want, "%v", errno)
		assert.Contains(t, err.Error(), "then run decode resume", "%v", errno)
		assert.ErrorIs(t, err, errno)
		assert.False(t, Retryable(err), "%v is not retried", errno)
	}
	other := storageErr("write", "p", syscall.EIO)
	assert.Equal(t, syscall.EIO, other, "other errors pass through")
	assert.True(t, Retryable(fmt.Errorf("x: %w", fs.ErrNotExist)), "a directory a prune removed")
	assert.True(t, Retryable(fmt.Errorf("x: %w", ErrConflict)), "a ref lock held past the wait")
	assert.False(t, Retryable(fmt.Errorf("x: %w: %w", ErrConflict, errRefMoved)), "a ref another writer moved")
	assert.False(t, Retryable(fmt.Errorf("x: %w", context.Canceled)))
}
