//go:build unix

package commands

import "syscall"

// umask sets the process's file mode mask and returns the old one, so the
// proxy's socket is created readable by its user only.
func umask(m int) int { return syscall.Umask(m) }
