//go:build unix

package tools

import (
	"errors"
	"fmt"
	"syscall"
)

// readFileInto reads the regular file at path whole into buf's storage,
// growing it when needed; files over grepMaxFileSize are not read. It uses
// raw system calls because os.Open spends three more per file registering
// with the poller, which doubles the cost of searching a tree of small
// files; O_NONBLOCK keeps a FIFO swapped in after the walk from blocking.
func readFileInto(buf []byte, path string) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return buf, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := retryEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return buf, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, fmt.Errorf("%s: not a regular file", path)
	}
	size := int(st.Size)
	if size > grepMaxFileSize {
		return buf, fmt.Errorf("%s: larger than %d bytes: %w", path, grepMaxFileSize, errGrepTooLarge)
	}
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:size]
	// Read what fstat promised; a file growing meanwhile is read as it was.
	for n := 0; n < size; {
		var k int
		err := retryEINTR(func() (err error) {
			k, err = syscall.Read(fd, buf[n:])
			return err
		})
		if err != nil {
			return buf[:n], err
		}
		if k == 0 {
			return buf[:n], nil
		}
		n += k
	}
	return buf, nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
