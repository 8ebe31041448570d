//go:build !unix

package tools

import (
	"fmt"
	"io"
	"os"
)

// readFileInto reads the file at path whole into buf's storage, growing it
// when needed. Files over grepMaxFileSize are not read.
func readFileInto(buf []byte, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	if fi.Size() > grepMaxFileSize {
		return buf, fmt.Errorf("%s: larger than %d bytes: %w", path, grepMaxFileSize, errGrepTooLarge)
	}
	if need := int(fi.Size()) + 512; cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
