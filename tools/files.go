package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// sniffLen is how much of a file is checked for a NUL byte to call it binary.
const sniffLen = 8 << 10

// FileTools returns the file tools over w: read, write, edit, multi_edit,
// glob and grep. The editing tools share one record of what was read, so a
// file must be read before it is changed and changes made on disk since then
// are noticed.
func FileTools(w *Workspace) []Tool { return FileToolsWith(w, nil) }

// FileToolsWith is FileTools reading and writing through an editor's
// buffers when b is not nil (see Buffers).
func FileToolsWith(w *Workspace, b Buffers) []Tool {
	st := newFileState(w)
	st.buf = b
	return []Tool{
		newReadTool(st),
		newWriteTool(st),
		newEditTool(st),
		newMultiEditTool(st),
		newGlobTool(w),
		newGrepTool(w),
	}
}

// fileState is what the file tools share: the workspace and which files were
// read, as they were then.
type fileState struct {
	ws  *Workspace
	buf Buffers // nil: the disk only

	mu   sync.Mutex
	seen map[string]fileStamp // by resolved absolute path

	// writeMu serialises write, edit and multi_edit, so two calls run in
	// parallel cannot both pass the read check and lose one change.
	writeMu sync.Mutex
}

// Buffers reads and writes text files as an editor holds them (the Agent
// Client Protocol's fs/read_text_file and fs/write_text_file), so that the
// model reads unsaved changes and its writes land in the editor's buffers.
// The file tools resolve and confine a path first and pass it absolute;
// on any error (errors.ErrUnsupported when the editor does not offer the
// method) they use the disk instead.
type Buffers interface {
	ReadText(ctx context.Context, abs string) (string, error)
	WriteText(ctx context.Context, abs, content string) error
}

// readText returns the editor's text of abs, when there is an editor and
// it answers.
func (s *fileState) readText(ctx context.Context, abs string) ([]byte, bool) {
	if s.buf == nil {
		return nil, false
	}
	text, err := s.buf.ReadText(ctx, abs)
	if err != nil {
		return nil, false
	}
	return []byte(text), true
}

// readCurrent reads abs as the editor holds it, else from disk.
func (s *fileState) readCurrent(ctx context.Context, abs string) ([]byte, error) {
	if data, ok := s.readText(ctx, abs); ok {
		return data, nil
	}
	return os.ReadFile(abs)
}

// writeOut writes the final content of abs through the editor when there
// is one and it accepts it, else to disk (see writeFileAtomic).
func (s *fileState) writeOut(ctx context.Context, abs string, data []byte, old fs.FileInfo) error {
	if s.buf != nil {
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
		if s.buf.WriteText(ctx, abs, string(data)) == nil {
			return nil
		}
	}
	return writeFileAtomic(abs, data, old)
}

// fileStamp identifies one version of a file. Modification times have
// nanosecond resolution on the file systems decode runs on, and the size
// catches most edits within one tick of coarser ones.
type fileStamp struct {
	mod  time.Time
	size int64
}

func newFileState(w *Workspace) *fileState {
	return &fileState{ws: w, seen: map[string]fileStamp{}}
}

func stampOf(fi fs.FileInfo) fileStamp { return fileStamp{mod: fi.ModTime(), size: fi.Size()} }

// same reports whether two stamps are of one version of a file; the times
// compare as instants, as one may have come back from a session's JSON.
func (a fileStamp) same(b fileStamp) bool { return a.mod.Equal(b.mod) && a.size == b.size }

// markRead records that abs was read (or written) as fi describes it, and
// returns the record for the call's result.
func (s *fileState) markRead(abs string, fi fs.FileInfo) []FileSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := stampOf(fi)
	s.seen[abs] = st
	return []FileSeen{{Path: abs, Mod: st.mod, Size: st.size}}
}

// remember restores what an earlier process of the session read.
func (s *fileState) remember(seen []FileSeen) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range seen {
		s.seen[f.Path] = fileStamp{mod: f.Mod, size: f.Size}
	}
}

// checkFresh returns a message for the model when the existing file abs,
// now as fi describes it, was not read in this session or changed since.
func (s *fileState) checkFresh(abs string, fi fs.FileInfo) string {
	s.mu.Lock()
	st, ok := s.seen[abs]
	s.mu.Unlock()
	rel := s.ws.Rel(abs)
	switch {
	case !ok:
		return fmt.Sprintf("%s exists and has not been read in this session: read it first, then change it", rel)
	case !st.same(stampOf(fi)):
		return fmt.Sprintf("%s changed on disk since you last read it: read it again before changing it", rel)
	}
	return ""
}

// isBinary reports whether data looks binary: a NUL byte near the start.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0
}

// writeFileAtomic replaces (or creates) path with data through a temporary
// file and a rename, so readers never see half a file and a symlink swapped
// in at the last moment is replaced rather than followed. An existing file
// keeps its permission bits and, where allowed, its owner.
func writeFileAtomic(path string, data []byte, old fs.FileInfo) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	if old == nil {
		// A new file: create it exclusively with the umask applied.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return errors.Join(err, f.Close())
	}
	tmp, err := os.CreateTemp(dir, ".decode-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(old.Mode().Perm()), tmp.Close())
	if err == nil {
		keepOwner(tmp.Name(), old)
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
