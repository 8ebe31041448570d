// Package memory finds and caps the instruction files decode reads into its
// system prompt (AGENTS.md and MEMORY.md), discovers skills, and appends
// learned sentences to MEMORY.md.
package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"decode/secrets"
)

// Default caps, from DESIGN.md §7.
const (
	DefaultMaxLines = 200
	DefaultMaxBytes = 25 * 1024
)

// fileNames are read in each directory, in this order.
var fileNames = [...]string{"AGENTS.md", "MEMORY.md"}

// File is one loaded instruction file.
type File struct {
	// Path is the file's absolute path.
	Path string
	// Size is the file's length in bytes on disk, before any cut.
	Size int
	// Lines is the file's line count on disk, before any cut.
	Lines int
	// Content is the text given to the model: the file, cut to the caps, with
	// a visible note appended when it was cut.
	Content string
	// Cut is "" when the whole file fits, else a note such as
	// "cut at 200 lines of 540".
	Cut string
}

// Options says where to look and how much to keep.
type Options struct {
	// Cwd is the working directory; "" means the process's.
	Cwd string
	// Home is the user's home directory, used for the user-wide file only
	// when UserConfigDir is "" (then Home/.config/decode).
	Home string
	// UserConfigDir is decode's config directory, e.g. $XDG_CONFIG_HOME/decode.
	UserConfigDir string
	// MaxLines caps each file's lines; 0 means DefaultMaxLines.
	MaxLines int
	// MaxBytes caps each file's bytes; 0 means DefaultMaxBytes.
	MaxBytes int
	// Root is the repository (or, outside one, the working directory): a
	// file inside it is read only if it resolves inside it or the user's
	// config directory, so a committed symlink cannot hand the model a
	// file from elsewhere. "" confines nothing.
	Root string
}

// Load reads the user-wide AGENTS.md first, then AGENTS.md and MEMORY.md in
// every directory from the filesystem root down to Cwd, so the nearest file
// comes last and wins. Each file is read once even when reached twice (a
// symlink, or the config directory inside the tree). Missing files are
// skipped quietly; files that exist but cannot be read give a warning and are
// skipped, never a failure.
func Load(o Options) (files []File, warnings []string) {
	if o.MaxLines <= 0 {
		o.MaxLines = DefaultMaxLines
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	var seen []os.FileInfo
	userDir := o.UserConfigDir
	if userDir == "" && o.Home != "" {
		userDir = filepath.Join(o.Home, ".config", "decode")
	}
	add := func(path string) {
		if err := secrets.Confine(path, o.Root, userDir); secrets.IsOutside(err) {
			warnings = append(warnings, fmt.Sprintf("memory: %v", err))
			return
		}
		f, info, err := loadFile(path, o.MaxLines, o.MaxBytes, seen, o.Root, userDir)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("memory: %v", err))
		case info != nil:
			seen = append(seen, info)
			files = append(files, f)
		}
	}

	if userDir != "" {
		add(absPath(filepath.Join(userDir, "AGENTS.md")))
	}
	for _, dir := range rootToCwd(absPath(o.Cwd)) {
		for _, name := range fileNames {
			add(filepath.Join(dir, name))
		}
	}
	return files, warnings
}

// absPath makes p absolute; if that fails (no working directory) it keeps p.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// rootToCwd lists dir and its ancestors, the filesystem root first.
func rootToCwd(dir string) []string {
	var dirs []string
	for {
		dirs = append(dirs, dir)
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

// loadFile reads one candidate. It returns a nil info and nil error when the
// file is absent or already loaded (one of seen).
func loadFile(path string, maxLines, maxBytes int, seen []os.FileInfo, root, userDir string) (File, os.FileInfo, error) {
	// Stat before opening: opening a FIFO named AGENTS.md would block.
	info, err := os.Stat(path)
	if err != nil {
		if isMissing(err) {
			if _, lerr := os.Lstat(path); lerr == nil {
				return File{}, nil, fmt.Errorf("%s: broken symlink, skipped", path)
			}
			return File{}, nil, nil
		}
		return File{}, nil, fmt.Errorf("%s: %w, skipped", path, unwrapPath(err))
	}
	if info.IsDir() {
		return File{}, nil, fmt.Errorf("%s: is a directory, skipped", path)
	}
	if !info.Mode().IsRegular() {
		return File{}, nil, fmt.Errorf("%s: not a regular file, skipped", path)
	}
	for _, s := range seen {
		if os.SameFile(s, info) {
			return File{}, nil, nil
		}
	}
	// Opened confined: a symlink swapped in since the check above is
	// refused too.
	f, err := secrets.Open(path, root, userDir)
	if err != nil {
		return File{}, nil, fmt.Errorf("%s: %w, skipped", path, unwrapPath(err))
	}
	defer f.Close()
	file, err := readCapped(f, maxLines, maxBytes)
	if err != nil {
		return File{}, nil, fmt.Errorf("%s: %w, skipped", path, unwrapPath(err))
	}
	file.Path = path
	return file, info, nil
}

// isMissing reports whether err means the path does not exist, including a
// path whose parent is a file.
func isMissing(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// unwrapPath drops the *PathError wrapper, whose message repeats the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readCapped reads r, keeping only what the caps allow in memory while still
// counting the whole file's bytes and lines for the note.
func readCapped(r io.Reader, maxLines, maxBytes int) (File, error) {
	// One byte past the cap tells a file of exactly maxBytes from a longer one.
	head, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return File{}, err
	}
	tail := lineCounter{last: '\n'}
	if len(head) > maxBytes {
		if _, err := io.Copy(&tail, r); err != nil {
			return File{}, err
		}
	}
	size := len(head) + tail.bytes
	lines := bytes.Count(head, []byte{'\n'}) + tail.newlines
	last := tail.last
	if tail.bytes == 0 && len(head) > 0 {
		last = head[len(head)-1]
	}
	if last != '\n' {
		lines++ // a last line without a newline still counts
	}
	content, cut := capText(head, size, lines, maxLines, maxBytes)
	return File{Size: size, Lines: lines, Content: content, Cut: cut}, nil
}

// lineCounter counts the bytes and newlines written to it, and keeps the last
// byte.
type lineCounter struct {
	bytes, newlines int
	last            byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		c.bytes += len(p)
		c.newlines += bytes.Count(p, []byte{'\n'})
		c.last = p[len(p)-1]
	}
	return len(p), nil
}

// capText cuts head (the first bytes of a file of size bytes and lines lines)
// to maxLines lines and maxBytes bytes, at a line boundary when one exists
// within the cap, else at a rune boundary, and appends a visible note when it
// cut. maxLines <= 0 means no line cap. A leading UTF-8 BOM is dropped.
func capText(head []byte, size, lines, maxLines, maxBytes int) (content, cut string) {
	kept := head
	if maxLines > 0 && lines > maxLines {
		if i := nthNewline(kept, maxLines); i >= 0 && i < maxBytes {
			kept = kept[:i+1]
			cut = fmt.Sprintf("cut at %d lines of %d", maxLines, lines)
		}
	}
	if cut == "" && size > maxBytes {
		kept = cutBytes(kept, maxBytes)
		cut = fmt.Sprintf("cut at %d bytes of %d", len(kept), size)
	}
	kept = bytes.TrimPrefix(kept, []byte("\uFEFF"))
	if cut == "" {
		return string(kept), ""
	}
	var b strings.Builder
	b.Write(kept)
	if len(kept) > 0 && kept[len(kept)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[decode: %s; read the file for the rest]\n", cut)
	return b.String(), cut
}

// cutBytes shortens b (longer than limit) to at most limit bytes: after its last
// newline within limit, or, in one long line, at the last rune start so no
// UTF-8 sequence is split.
func cutBytes(b []byte, limit int) []byte {
	if i := bytes.LastIndexByte(b[:limit], '\n'); i >= 0 {
		return b[:i+1]
	}
	n := limit
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// nthNewline returns the index of the n-th '\n' in b, or -1.
func nthNewline(b []byte, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// Render formats files as the memory section of the system prompt: each
// file under a header naming its path, user-wide first and nearest last.
// Blank files are left out; no files give "".
func Render(files []File) string {
	var b strings.Builder
	for _, f := range files {
		text := strings.TrimSpace(f.Content)
		if text == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("# Instructions from AGENTS.md and MEMORY.md\n" +
				"Follow them; when they disagree, the later (nearer) file wins.\n")
		}
		fmt.Fprintf(&b, "\n## %s\n%s\n", f.Path, text)
	}
	return b.String()
}
