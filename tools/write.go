package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

//go:embed write.md
var writeDesc string

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func newWriteTool(s *fileState) Tool {
	t := newFuncTool("write", writeDesc, false, s.write)
	t.preview = s.previewWrite
	return t
}

// previewWrite returns the unified diff a write would make: from the
// file's text, or from nothing for a new file; "" when it cannot tell.
func (s *fileState) previewWrite(ctx context.Context, a writeArgs) string {
	abs, err := s.ws.ResolveForWrite(a.Path)
	if err != nil {
		return ""
	}
	before, err := s.readCurrent(ctx, abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		before = nil
	case err != nil || isBinary(before):
		return ""
	}
	return textChange(s.ws.Rel(abs), string(before), a.Content)
}

// write creates a file or replaces one that was read in this session and
// has not changed since.
func (s *fileState) write(ctx context.Context, a writeArgs) (Result, error) {
	abs, err := s.ws.ResolveForWrite(a.Path)
	if err != nil {
		return errResult("write: refused", err.Error()), nil
	}
	rel := s.ws.Rel(abs)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	var before []byte
	old, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return errResult("write "+rel+": failed", err.Error()), nil
	default:
		if msg := s.checkFresh(abs, old); msg != "" {
			return errResult("write "+rel+": not read", msg), nil
		}
		if before, err = s.readCurrent(ctx, abs); err != nil {
			return errResult("write "+rel+": failed", err.Error()), nil
		}
	}
	if err := s.writeOut(ctx, abs, []byte(a.Content), old); err != nil {
		return errResult("write "+rel+": failed", fmt.Sprintf("write %s: %v", rel, err)), nil
	}
	var seen []FileSeen
	if fi, err := os.Stat(abs); err == nil {
		seen = s.markRead(abs, fi)
	}
	lines := strings.Count(a.Content, "\n")
	if a.Content != "" && !strings.HasSuffix(a.Content, "\n") {
		lines++
	}
	if old == nil {
		return Result{
			Content: fmt.Sprintf("Created %s (%d lines, %d bytes).", rel, lines, len(a.Content)),
			Note:    fmt.Sprintf("created %s (%d lines)", rel, lines),
			Seen:    seen,
		}, nil
	}
	d := lineDiff(string(before), a.Content)
	return Result{
		Content: fmt.Sprintf("Wrote %s (%d lines, %d bytes; +%d -%d lines).", rel, lines, len(a.Content), d.added, d.removed),
		Note:    fmt.Sprintf("wrote %s (+%d -%d)", rel, d.added, d.removed),
		Seen:    seen,
	}, nil
}
