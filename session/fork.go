package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ForkData is the first entry a fork or a replay writes: where it branched
// off. Its parent is the fork point, an entry of the source.
type ForkData struct {
	From string `json:"from"`
	At   int    `json:"at"`
	// Replay is set when the branch re-runs the source's user turns.
	Replay bool `json:"replay,omitempty"`
	// Model, when set, is the model the branch continues with instead of the
	// one its start entry names.
	Model string `json:"model,omitempty"`
}

// SplitEntryRef splits "SESSION@ENTRY" into the session reference and the
// entry id; at is 0 when no entry is named. "@", "@~N" and "@~N@ENTRY" work.
func SplitEntryRef(s string) (ref string, at int, err error) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 {
		return s, 0, nil
	}
	ref, num := s[:i], s[i+1:]
	if strings.HasPrefix(num, "~") {
		return s, 0, nil // "x@~2" is not an entry; let resolution report it
	}
	at, err = strconv.Atoi(num)
	if err != nil || at <= 0 {
		return "", 0, fmt.Errorf("%q: the entry after @ must be a positive number, as shown by decode log SESSION", s)
	}
	return ref, at, nil
}

// Fork creates a session that shares ref's history up to and including
// entry at (at <= 0: all of it) and records d, with From and At filled in,
// as its first entry of its own (a fork entry; a replay sets d.Replay). The
// new session is returned unlocked; see forkAt for how the history is shared.
func (s *Store) Fork(ctx context.Context, ref string, at int, d ForkData) (*Session, error) {
	src, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	f, err := s.forkAt(ctx, src, at)
	if err != nil {
		return nil, err
	}
	if err := f.Lock(); err != nil {
		return nil, err
	}
	err = f.Append(ctx, forkEntry(src, f.lastID(), d))
	if uerr := f.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", src, err)
	}
	return f, nil
}

// forkEntry is the first entry of a fork of session src after entry at.
func forkEntry(src string, at int, d ForkData) Entry {
	d.From, d.At = src, at
	note := fmt.Sprintf("from %s@%d", d.From, d.At)
	if d.Replay {
		note = "replay of " + d.From
	}
	return NewEntry(TypeFork, d, note)
}

// forkAt creates a session whose ref points at the commit of ref's session
// that holds its entries up to and including entry id at (at <= 0: all of
// them). The new session shares that history; nothing is copied. When at
// falls inside a batch that was committed at once, one commit is added on
// top of the batch's parent holding the entries up to at.
func (s *Store) forkAt(ctx context.Context, ref string, at int) (*Session, error) {
	src, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	if len(src.entries) == 0 {
		return nil, fmt.Errorf("fork %s: the session has no entries", src.id)
	}
	idx := len(src.entries) - 1
	if at > 0 {
		idx = slices.IndexFunc(src.entries, func(e Entry) bool { return e.ID == at })
		if idx < 0 {
			return nil, fmt.Errorf("fork %s: no entry %d (last is %d)", src.id, at, src.lastID())
		}
	}
	point, err := s.forkPoint(ctx, src, idx)
	if err != nil {
		return nil, fmt.Errorf("fork %s@%d: %w", src.id, src.entries[idx].ID, err)
	}
	dst, err := s.Create(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.refs.update(refPrefix+dst.id, plumbing.ZeroHash, point); err != nil {
		return nil, fmt.Errorf("fork %s: %w", src.id, err)
	}
	if err := dst.load(point); err != nil {
		return nil, err
	}
	return dst, nil
}

// forkPoint finds the commit whose tree holds exactly src's entries 0..idx,
// walking back from the tip along first parents and reading only the
// Decode-Entries trailers. If no commit ends there, it writes one.
func (s *Store) forkPoint(ctx context.Context, src *Session, idx int) (plumbing.Hash, error) {
	want := idx + 1
	if want == len(src.entries) {
		return src.tip, nil
	}
	h := src.tip
	for {
		if err := ctx.Err(); err != nil {
			return plumbing.ZeroHash, err
		}
		c, err := s.db.commit(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		n := parseTrailers(c.Message).entries
		if n == want {
			// Trailers count the entries readable when the commit was
			// written; a line unreadable now shifts positions, so the
			// commit is taken only if it really ends at the entry.
			if id, ok := s.lastEntryID(c); ok && id == src.entries[idx].ID {
				return h, nil
			}
			return s.truncatedCommit(src, idx, []plumbing.Hash{h})
		}
		if n < want {
			return s.truncatedCommit(src, idx, []plumbing.Hash{h})
		}
		if len(c.ParentHashes) == 0 {
			return s.truncatedCommit(src, idx, nil)
		}
		h = c.ParentHashes[0]
	}
}

// truncatedCommit writes a commit holding src's lines up to entry idx: the
// chunks before it as they are, and its own chunk cut after its line.
func (s *Store) truncatedCommit(src *Session, idx int, parents []plumbing.Hash) (plumbing.Hash, error) {
	end := src.ends[idx]
	chunks := slices.Clone(src.chunks[:end.chunk+1])
	data := src.last
	if end.chunk != len(src.chunks)-1 {
		var err error
		if data, err = s.db.blob(chunks[end.chunk].Hash); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if end.off < len(data) {
		if err := s.sealChunk(chunks, data[:end.off]); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	var m meta
	for _, e := range src.entries[:idx+1] {
		m.observe(e)
	}
	msg := fmt.Sprintf("fork %s@%d\n\n%s", src.id, src.entries[idx].ID, m.trailers())
	return s.writeCommit(src.rootExtra, src.dirExtra, chunks, parents, msg, s.clock())
}

// lastEntryID returns the id of the last entry of commit c's session.
func (s *Store) lastEntryID(c *object.Commit) (int, bool) {
	root, err := s.db.tree(c.TreeHash)
	if err != nil {
		return 0, false
	}
	var last plumbing.Hash
	for _, e := range root.Entries {
		if e.Name != sessionDir {
			continue
		}
		dir, err := s.db.tree(e.Hash)
		if err != nil {
			return 0, false
		}
		for _, f := range dir.Entries {
			if f.Mode.IsFile() && strings.HasSuffix(f.Name, ".jsonl") {
				last = f.Hash
			}
		}
	}
	if last.IsZero() {
		return 0, false
	}
	data, err := s.db.blob(last)
	if err != nil {
		return 0, false
	}
	data = bytes.TrimRight(data, "\n")
	e, err := parseEntry(data[bytes.LastIndexByte(data, '\n')+1:])
	return e.ID, err == nil
}
