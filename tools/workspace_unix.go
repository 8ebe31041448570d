//go:build unix

package tools

import (
	"io/fs"
	"os"
	"syscall"
)

// linkCount returns the number of hard links of the file fi describes.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// keepOwner gives path the owner and group of the file fi describes, best
// effort: a replaced file keeps its owner when decode runs as root, and an
// unprivileged process can only ever replace its own files anyway.
func keepOwner(path string, fi fs.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = os.Lchown(path, int(st.Uid), int(st.Gid))
	}
}
