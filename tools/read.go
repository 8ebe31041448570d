package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed read.md
var readDesc string

const (
	readDefaultLimit = 2000     // lines shown when no limit is given
	readMaxLineChars = 2000     // longer lines are cut
	readMaxBytes     = 96 << 10 // output cap, whatever the limit
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty" desc:"1-based line"`
	Limit  int    `json:"limit,omitempty"`
}

func newReadTool(s *fileState) Tool {
	return &readTool{Tool: newFuncTool("read", readDesc, true, s.read), st: s}
}

// readTool is the read tool, which also restores what the file tools read
// in an earlier process of the session (see Registry.Remember).
type readTool struct {
	Tool
	st *fileState
}

// Remember marks the files as read, as they were then.
func (t *readTool) Remember(seen []FileSeen) { t.st.remember(seen) }

// read shows a page of a text file with line numbers and records the file
// as read for the editing tools.
func (s *fileState) read(ctx context.Context, a readArgs) (Result, error) {
	if a.Offset < 0 || a.Limit < 0 {
		return errResult("read: bad arguments", "offset and limit must be positive"), nil
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 {
		limit = readDefaultLimit
	}
	abs, fi, res, ok := s.openable(a.Path, "read")
	if !ok {
		return res, nil
	}
	rel := s.ws.Rel(abs)
	// The editor's buffer when there is one, else the file on disk; the
	// read-before-edit record is of the file on disk either way.
	var src io.Reader
	var size int64
	if text, ok := s.readText(ctx, abs); ok {
		src, size = bytes.NewReader(text), int64(len(text))
	} else {
		f, err := os.Open(abs)
		if err != nil {
			return errResult("read "+rel+": failed", err.Error()), nil
		}
		defer f.Close()
		if fi, err = f.Stat(); err != nil {
			return Result{}, fmt.Errorf("read %s: %w", rel, err)
		}
		src, size = f, fi.Size()
	}
	if size == 0 {
		return Result{Content: rel + " is empty (0 bytes).", Note: "read " + rel + " (empty)", Seen: s.markRead(abs, fi)}, nil
	}
	br := bufio.NewReaderSize(src, 64<<10)
	if head, _ := br.Peek(sniffLen); isBinary(head) {
		return errResult("read "+rel+": binary", fmt.Sprintf("%s is a binary file (%d bytes); read shows text files only.", rel, size)), nil
	}
	p, err := readPage(br, offset, limit)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", rel, err)
	}
	if offset > p.total {
		return errResult("read "+rel+": past the end", fmt.Sprintf("offset %d is past the end: %s has %d lines.", offset, rel, p.total)), nil
	}
	seen := s.markRead(abs, fi)
	last := offset + p.shown - 1
	note := fmt.Sprintf("read %s %d-%d", rel, offset, last)
	if last < p.total {
		note += " of " + strconv.Itoa(p.total)
		fmt.Fprintf(&p.out, "(lines %d-%d of %d shown; read with offset=%d to continue)\n", offset, last, p.total, last+1)
	}
	return Result{Content: p.out.String(), Note: note, Seen: seen}, nil
}

// openable resolves path and checks that it names an existing regular file,
// so that opening it cannot block (a FIFO) or surprise (a directory).
func (s *fileState) openable(path, tool string) (string, fs.FileInfo, Result, bool) {
	abs, err := s.ws.Resolve(path)
	if err != nil {
		return "", nil, errResult(tool+": refused", err.Error()), false
	}
	rel := s.ws.Rel(abs)
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, errResult(tool+" "+rel+": not found", rel+" does not exist; use glob to find files."), false
	case err != nil:
		return "", nil, errResult(tool+" "+rel+": failed", err.Error()), false
	case fi.IsDir():
		return "", nil, errResult(tool+" "+rel+": a directory", rel+" is a directory; use glob to list its files."), false
	case !fi.Mode().IsRegular():
		return "", nil, errResult(tool+" "+rel+": not a file", rel+" is not a regular file."), false
	}
	return abs, fi, Result{}, true
}

// page is the numbered lines read shows and what it learned of the file.
type page struct {
	out   bytes.Buffer
	shown int // lines written to out
	total int // lines in the file
}

// readPage numbers limit lines from line offset on and counts the rest.
func readPage(br *bufio.Reader, offset, limit int) (*page, error) {
	p := &page{}
	var line []byte
	for n := 1; ; n++ {
		var size int
		var err error
		line, size, err = nextLine(br, line[:0], readMaxLineChars*utf8.UTFMax)
		if size == 0 && err == io.EOF {
			return p, nil
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		p.total = n
		if n >= offset && p.shown < limit && p.out.Len() < readMaxBytes {
			truncated := size > len(line)
			if n == 1 {
				line = bytes.TrimPrefix(line, utf8BOM)
			}
			writeNumbered(&p.out, n, line, size, truncated)
			p.shown++
		} else if n >= offset {
			rest, err := countLines(br)
			p.total += rest
			return p, err
		}
		if err == io.EOF {
			return p, nil
		}
	}
}

// nextLine reads one line, keeping at most keepMax bytes of it in keep, and
// returns the line's full size in bytes (0 at the end of the input).
func nextLine(br *bufio.Reader, keep []byte, keepMax int) ([]byte, int, error) {
	size := 0
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if room := keepMax - len(keep); room > 0 {
			keep = append(keep, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return keep, size, err
		}
	}
}

// writeNumbered writes "   12\tline\n", cutting a line longer than
// readMaxLineChars characters; truncated says line is only the start of a
// line of size bytes.
func writeNumbered(out *bytes.Buffer, n int, line []byte, size int, truncated bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	fmt.Fprintf(out, "%5d\t", n)
	if cut := runeCut(line, readMaxLineChars); cut < len(line) || truncated {
		out.Write(line[:cut])
		fmt.Fprintf(out, " [... line cut at %d chars; it has %d bytes]\n", readMaxLineChars, size)
		return
	}
	out.Write(line)
	out.WriteByte('\n')
}

// runeCut returns the byte length of the first n runes of b.
func runeCut(b []byte, n int) int {
	if len(b) <= n {
		return len(b)
	}
	i := 0
	for range n {
		if i >= len(b) {
			return len(b)
		}
		_, w := utf8.DecodeRune(b[i:])
		i += w
	}
	return i
}

// countLines counts the lines left in br, a last line without a newline
// included.
func countLines(br *bufio.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte("\n"))
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// cutString shortens s to at most n bytes on a character boundary, marking
// the cut.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimRightFunc(s[:n], func(r rune) bool { return r == utf8.RuneError }) + "…"
}
