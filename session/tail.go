package session

import (
	"bytes"
	"context"
)

// OpenTail opens a session to continue it, reading only what that needs
// once the session has been compacted: its first chunk (the start entry and
// the first prompt) and the chunks from the one holding the last
// compaction's first kept entry on. So a resume costs the same however long
// the session grew. Entries returns only those entries; everything else
// (appending, JSONL, the trailers) sees the whole session. A session never
// compacted, or short, is read whole.
func (s *Store) OpenTail(ctx context.Context, ref string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, h, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	sess := &Session{store: s, id: id, tail: true}
	if err := sess.load(h); err != nil {
		return nil, err
	}
	return sess, nil
}

// Partial reports whether the session was opened with OpenTail and entries
// between its first chunk and its last compaction were not read.
func (s *Session) Partial() bool { return s.tail }

// compactionMark is how a compaction entry's line starts its type; a chunk
// without it holds none.
var compactionMark = []byte(`"type":"compaction"`)

// tailStart returns the index of the first chunk a tail load must read: the
// chunk holding the first entry the last compaction kept (or the
// compaction, when it kept none). 0 means read everything: no compaction,
// or one within the first chunks.
func (s *Session) tailStart() int {
	firstKept, found := 0, false
	for i := len(s.chunks) - 1; i >= 2; i-- {
		data, err := s.store.db.blob(s.chunks[i].Hash)
		if err != nil {
			return 0
		}
		if !found && bytes.Contains(data, compactionMark) {
			if firstKept, found = lastCompactionIn(data); !found {
				return 0
			}
		}
		if found && (firstKept == 0 || firstID(data) <= firstKept) {
			return i
		}
	}
	return 0
}

// lastCompactionIn finds the last compaction entry of a chunk and returns
// the first entry it kept.
func lastCompactionIn(data []byte) (int, bool) {
	kept, found := 0, false
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(line, compactionMark) {
			continue
		}
		e, err := parseEntry(line)
		if err != nil || e.Type != TypeCompaction {
			continue
		}
		var d struct {
			FirstKept int `json:"first_kept"`
		}
		if e.Decode(&d) == nil {
			kept, found = d.FirstKept, true
		}
	}
	return kept, found
}

// firstID is the id of a chunk's first entry; a chunk that does not start
// with one counts as starting too late, so the one before it is read too.
func firstID(data []byte) int {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	e, err := parseEntry(line)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return e.ID
}
