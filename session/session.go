package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// maxChunk is the largest chunk file the store writes, except that a single
// line larger than this gets a chunk of its own.
const maxChunk = 64 << 10

// sessionDir is the tree holding the chunk files.
const sessionDir = "session"

// Problem is a line that could not be read as an entry while loading.
type Problem struct {
	Chunk string // chunk file, e.g. "session/000002.jsonl"
	Line  int    // 1-based line number within the chunk
	Err   string
}

// Position says where the problem is and what it is, as log --check
// prints it: "session/000002.jsonl:7: truncated line: ...".
func (p Problem) Position() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Chunk, p.Line, p.Err)
	}
	return fmt.Sprintf("%s: %s", p.Chunk, p.Err)
}

// lineEnd locates the end of an entry's line: the chunk it is in and the
// offset just past its newline.
type lineEnd struct{ chunk, off int }

// Session is one session: the entries read and written so far and the tip
// commit of its ref, with the tip's chunk list kept in memory so an append
// rewrites only the last chunk without reading the repository.
type Session struct {
	store *Store
	id    string
	tip   plumbing.Hash // zero until the first append of a new session

	rootExtra []object.TreeEntry // other entries of the root tree, kept as they are
	dirExtra  []object.TreeEntry // other entries of session/, kept as they are
	chunks    []object.TreeEntry // chunk files of session/, in order
	last      []byte             // content of the last chunk; never modified in place

	entries  []Entry
	ends     []lineEnd
	maxID    int
	problems []Problem
	meta     meta

	lockPath  string
	lockBody  string
	reclaimed string
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Ref returns the git ref the session is stored under.
func (s *Session) Ref() string { return refPrefix + s.id }

// Entries returns everything loaded or appended so far, in order.
func (s *Session) Entries() []Entry { return slices.Clone(s.entries) }

// Problems returns the lines that could not be read while loading.
func (s *Session) Problems() []Problem { return slices.Clone(s.problems) }

// load reads the session at commit h, replacing what s holds.
func (s *Session) load(h plumbing.Hash) error {
	db := s.store.db
	c, err := db.commit(h)
	if err != nil {
		return fmt.Errorf("load session %s: %w", s.id, err)
	}
	root, err := db.tree(c.TreeHash)
	if err != nil {
		return fmt.Errorf("load session %s: %w", s.id, err)
	}
	fresh := Session{store: s.store, id: s.id, tip: h}
	var dir *object.Tree
	for _, e := range root.Entries {
		if e.Name == sessionDir && e.Mode == filemode.Dir {
			if dir, err = db.tree(e.Hash); err != nil {
				return fmt.Errorf("load session %s: %w", s.id, err)
			}
			continue
		}
		fresh.rootExtra = append(fresh.rootExtra, e)
	}
	if dir != nil {
		for _, e := range dir.Entries {
			if e.Mode.IsFile() && strings.HasSuffix(e.Name, ".jsonl") {
				fresh.chunks = append(fresh.chunks, e)
			} else {
				fresh.dirExtra = append(fresh.dirExtra, e)
			}
		}
	}
	for i, ch := range fresh.chunks {
		data, err := db.blob(ch.Hash)
		if err != nil {
			return fmt.Errorf("load session %s: %s: %w", s.id, ch.Name, err)
		}
		fresh.parseChunk(i, data)
		if i == len(fresh.chunks)-1 {
			fresh.last = data
		}
	}
	fresh.lockPath, fresh.lockBody, fresh.reclaimed = s.lockPath, s.lockBody, s.reclaimed
	*s = fresh
	return nil
}

// parseChunk reads the lines of chunk i; a line that is not a valid entry is
// recorded as a Problem and skipped, blank lines are skipped silently.
func (s *Session) parseChunk(i int, data []byte) {
	name := sessionDir + "/" + s.chunks[i].Name
	lineNo := 0
	for off := 0; off < len(data); lineNo++ {
		line, end := data[off:], len(data)
		if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
			line, end = line[:nl], off+nl+1
		}
		off = end
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseEntry(line)
		if err != nil {
			if end == len(data) && data[end-1] != '\n' {
				err = fmt.Errorf("truncated line: %w", err)
			}
			s.problems = append(s.problems, Problem{Chunk: name, Line: lineNo + 1, Err: err.Error()})
			continue
		}
		s.add(e, lineEnd{chunk: i, off: end})
	}
}

// lastID returns the id of the last entry, and nextID the id the next one gets.
func (s *Session) lastID() int {
	if len(s.entries) == 0 {
		return 0
	}
	return s.entries[len(s.entries)-1].ID
}

func (s *Session) nextID() int { return s.maxID + 1 }

// add records an entry read or written at position end.
func (s *Session) add(e Entry, end lineEnd) {
	s.entries = append(s.entries, e)
	s.ends = append(s.ends, end)
	s.maxID = max(s.maxID, e.ID)
	s.meta.observe(e)
}

// JSONL returns the session's chunks concatenated, exactly as stored at the
// tip this session knows.
func (s *Session) JSONL(ctx context.Context) ([]byte, error) {
	var out []byte
	for i, ch := range s.chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if i == len(s.chunks)-1 {
			return append(out, s.last...), nil
		}
		data, err := s.store.db.blob(ch.Hash)
		if err != nil {
			return nil, fmt.Errorf("read session %s: %w", s.id, err)
		}
		out = append(out, data...)
	}
	return out, nil
}

// chunkName names the chunk after the one called prev ("" for the first).
func chunkName(prev string, count int) string {
	n := count
	if prev != "" {
		if v, err := strconv.Atoi(strings.TrimSuffix(prev, ".jsonl")); err == nil {
			n = v + 1
		}
	}
	return fmt.Sprintf("%06d.jsonl", n)
}
