//go:build unix

package memory

import (
	"os"
	"syscall"
)

// noFollow makes an open fail on a symlink rather than follow it.
const noFollow = syscall.O_NOFOLLOW

// multiplyLinked reports whether the open file has other names (a hard
// link to a file elsewhere, such as ~/.bashrc).
func multiplyLinked(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
