package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

// linePos is a line of a chunk: its index in chunks and 1-based number.
type linePos struct{ chunk, line int }

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
	// tornTail is set when unreadable lines follow the last entry read.
	tornTail bool
	// newer is the first entry read whose schema version is newer than
	// this build's; load refuses the session with it.
	newer *VersionError
	// seen maps the ids read so far to where, while loading.
	seen map[int]linePos

	lockPath  string
	lockBody  string
	reclaimed string
	// tail is set for a session opened with OpenTail: only its first chunk
	// and its chunks from the last compaction on were read.
	tail bool
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
	fresh.seen = map[int]linePos{}
	from := 0 // chunks 1 to from-1 are skipped (OpenTail)
	if s.tail {
		from = fresh.tailStart()
	}
	for i, ch := range fresh.chunks {
		if i > 0 && i < from {
			continue
		}
		fresh.checkChunkName(i)
		data, err := db.blob(ch.Hash)
		if err != nil {
			return fmt.Errorf("load session %s: %s: %w", s.id, ch.Name, err)
		}
		fresh.parseChunk(i, data)
		if fresh.newer != nil {
			fresh.newer.Session = s.id
			return fresh.newer
		}
		if i == len(fresh.chunks)-1 {
			fresh.last = data
		}
	}
	fresh.seen = nil
	if from > 1 {
		// What was skipped is summed up by the tip's trailers.
		fresh.meta, fresh.tail = parseTrailers(c.Message), true
		fresh.lockPath, fresh.lockBody, fresh.reclaimed = s.lockPath, s.lockBody, s.reclaimed
		*s = fresh
		return nil
	}
	// The tip's trailer says how many entries its writer had: fewer read
	// back means lines or chunks were lost (an emptied chunk, a missing
	// file), which nothing else would show.
	if want := parseTrailers(c.Message).entries; want > 0 && want != len(fresh.entries) {
		missing := ""
		if want > len(fresh.entries) {
			missing = fmt.Sprintf(" (%d missing)", want-len(fresh.entries))
			fresh.tornTail = true
		}
		fresh.problems = append(fresh.problems, Problem{
			Chunk: "commit " + h.String()[:12],
			Err:   fmt.Sprintf("its %s trailer says %d entries, %d were read%s", trailerEntries, want, len(fresh.entries), missing),
		})
	}
	fresh.lockPath, fresh.lockBody, fresh.reclaimed = s.lockPath, s.lockBody, s.reclaimed
	*s = fresh
	return nil
}

// checkChunkName reports a chunk missing before chunk i: chunks are
// numbered from 000000 without gaps, so a gap is a lost file.
func (s *Session) checkChunkName(i int) {
	n, err := strconv.Atoi(strings.TrimSuffix(s.chunks[i].Name, ".jsonl"))
	if err != nil {
		return // a name this package does not write: read in order, as stored
	}
	prev := -1
	if i > 0 {
		if p, err := strconv.Atoi(strings.TrimSuffix(s.chunks[i-1].Name, ".jsonl")); err == nil {
			prev = p
		}
	}
	for m := prev + 1; m < n; m++ {
		s.problems = append(s.problems, Problem{
			Chunk: fmt.Sprintf("%s/%06d.jsonl", sessionDir, m),
			Err:   fmt.Sprintf("chunk file missing (the session has %s after it): its entries are lost", s.chunks[i].Name),
		})
	}
}

// parseChunk reads the lines of chunk i; a line that is not a valid entry is
// recorded as a Problem and skipped, blank lines are skipped silently. An
// entry whose id was already read is reported and skipped; one with
// invalid UTF-8 is reported and kept with U+FFFD in place of the bad bytes.
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
		if len(bytes.Trim(line, "\x00")) == 0 {
			s.problem(name, lineNo+1, "line of zero bytes (a write the disk lost)")
			continue
		}
		bad := -1
		if !utf8.Valid(line) {
			bad = invalidUTF8At(line)
			line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
		}
		e, err := parseEntry(line)
		if err == nil {
			e, err = migrate(e)
		}
		if ve, ok := err.(*VersionError); ok {
			s.newer = ve
			return
		}
		if err != nil {
			if end == len(data) && data[end-1] != '\n' {
				err = fmt.Errorf("truncated line: %w", err)
			}
			s.problem(name, lineNo+1, err.Error())
			continue
		}
		if first, dup := s.seen[e.ID]; dup {
			s.problems = append(s.problems, Problem{Chunk: name, Line: lineNo + 1,
				Err: fmt.Sprintf("duplicate entry id %d (first at %s/%s:%d); skipped", e.ID, sessionDir, s.chunks[first.chunk].Name, first.line)})
			continue
		}
		if s.seen != nil {
			s.seen[e.ID] = linePos{i, lineNo + 1}
		}
		if bad >= 0 {
			s.problems = append(s.problems, Problem{Chunk: name, Line: lineNo + 1,
				Err: fmt.Sprintf("invalid UTF-8 at byte %d; entry %d is read with U+FFFD in its place", bad, e.ID)})
		}
		s.add(e, lineEnd{chunk: i, off: end})
	}
}

// problem records an unreadable line. Lines unread after the last entry
// read make the session's tail torn: what they held may have happened.
func (s *Session) problem(chunk string, line int, err string) {
	s.problems = append(s.problems, Problem{Chunk: chunk, Line: line, Err: err})
	s.tornTail = true
}

// invalidUTF8At returns the offset of the first byte of b that is not
// valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// TornTail reports whether lines after the last entry read could not be
// read, or the tip's trailer counts entries that are missing: the session
// may have gone further than its entries show. Resume then treats a call
// of the last response that could have started as interrupted, never
// running a side effect twice.
func (s *Session) TornTail() bool { return s.tornTail }

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
	s.tornTail = false
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
