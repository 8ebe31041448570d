package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Identity of the commits decode writes.
const (
	committerName  = "decode"
	committerEmail = "decode@localhost"
)

// Append writes es as one commit on the session's ref. It fills each entry's
// V, ID (previous id + 1), Parent (the previous entry) and TS (now, when
// zero; always UTC), redacts secrets, appends the lines to the last chunk
// (or new ones past 64 KiB) and moves the ref from the tip this session knows
// to the new commit. If the ref moved meanwhile it returns ErrConflict and
// the session is unchanged.
func (s *Session) Append(ctx context.Context, es ...Entry) error {
	if len(es) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	now := s.store.clock().UTC()
	added, lines, err := s.prepare(es, now)
	if err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	m := s.meta
	for _, e := range added {
		m.observe(e)
	}
	var parents []plumbing.Hash
	if !s.tip.IsZero() {
		parents = []plumbing.Hash{s.tip}
	}
	// Notes can quote commands and arguments: the subject is redacted like the lines.
	subj := oneLine(string(s.store.redact([]byte(subject(added)))), 200)
	msg := subj + "\n\n" + m.trailers()
	// What git prune removed of the appends before is restored first, so
	// that this commit's parent and unchanged chunks exist (see repair).
	if err := s.store.db.repair(false); err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	var (
		chunks []object.TreeEntry
		last   []byte
		ends   []lineEnd
	)
	if chunks, last, ends, err = s.writeChunks(lines); err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	h, _, err := s.store.writeCommitTrees(s.rootExtra, s.dirExtra, chunks, parents, msg, now)
	if err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	if err := s.store.refs.update(refPrefix+s.id, s.tip, h); err != nil {
		return fmt.Errorf("append to %s: %w", s.id, err)
	}
	s.tip, s.chunks, s.last = h, chunks, last
	for i, e := range added {
		s.add(e, ends[i])
	}
	return nil
}

// prepare numbers, timestamps, encodes and redacts the entries. It returns the
// entries as they will read back and their lines, each ending in a newline.
func (s *Session) prepare(es []Entry, now time.Time) ([]Entry, [][]byte, error) {
	added := make([]Entry, len(es))
	lines := make([][]byte, len(es))
	id, parent := s.nextID(), s.lastID()
	for i, e := range es {
		e.V, e.ID, e.Parent = Version, id, parent
		if e.TS.IsZero() {
			e.TS = now
		}
		e.TS = e.TS.UTC()
		line, err := encodeLine(e)
		if err != nil {
			return nil, nil, fmt.Errorf("entry %d (%s): %w", id, e.Type, err)
		}
		red, mem := s.store.redactLine(line)
		if !bytes.Equal(red, line) {
			if err := checkLine(red); err != nil {
				return nil, nil, fmt.Errorf("entry %d (%s) after redaction: %w", id, e.Type, err)
			}
		}
		if !bytes.Equal(mem, line) {
			back, err := parseEntry(mem)
			if err != nil {
				return nil, nil, fmt.Errorf("entry %d (%s) after redaction: %w", id, e.Type, err)
			}
			back.Note = e.Note
			e = back
		}
		line = red
		added[i], lines[i] = e, append(line, '\n')
		parent = id
		id++
	}
	return added, lines, nil
}

// encodeLine encodes an entry as one JSON line without its newline. HTML
// characters are left alone: the line is read by people and git, not browsers.
func encodeLine(e Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func checkLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("line contains a newline")
	}
	if !json.Valid(line) {
		return errors.New("line is not valid JSON")
	}
	return nil
}

// writeChunks appends lines to the last chunk, starting a new chunk whenever
// the current one would pass maxChunk, and writes the blobs of the chunks it
// changed. Unchanged chunks keep their hashes. It returns the new chunk list,
// the new last chunk's content and where each line ends.
func (s *Session) writeChunks(lines [][]byte) ([]object.TreeEntry, []byte, []lineEnd, error) {
	chunks := slices.Clone(s.chunks)
	// The full slice expression makes the first append copy, so s.last is
	// never modified and a failed append leaves the session as it was.
	cur := s.last[:len(s.last):len(s.last)]
	if len(chunks) == 0 {
		chunks = append(chunks, object.TreeEntry{Name: chunkName("", 0)})
	}
	dirty := false // whether cur differs from the stored blob of the last chunk
	if len(cur) > 0 && cur[len(cur)-1] != '\n' {
		cur = append(cur, '\n') // end a truncated line so the next one starts cleanly
		dirty = true
	}
	ends := make([]lineEnd, len(lines))
	for i, line := range lines {
		if len(cur) > 0 && len(cur)+len(line) > maxChunk {
			if dirty {
				if err := s.store.sealChunk(chunks, cur); err != nil {
					return nil, nil, nil, err
				}
			}
			prev := chunks[len(chunks)-1].Name
			chunks = append(chunks, object.TreeEntry{Name: chunkName(prev, len(chunks))})
			cur = nil
		}
		cur = append(cur, line...)
		dirty = true
		ends[i] = lineEnd{chunk: len(chunks) - 1, off: len(cur)}
	}
	if err := s.store.sealChunk(chunks, cur); err != nil {
		return nil, nil, nil, err
	}
	return chunks, cur, ends, nil
}

// sealChunk writes data as the blob of the last chunk in chunks.
func (st *Store) sealChunk(chunks []object.TreeEntry, data []byte) error {
	h, err := st.db.putBlob(data)
	if err != nil {
		return err
	}
	chunks[len(chunks)-1] = fileEntry(chunks[len(chunks)-1].Name, h)
	return nil
}

// writeCommit writes the trees for chunks (plus the entries kept from the
// parent's trees) and a commit of them.
func (st *Store) writeCommit(rootExtra, dirExtra, chunks []object.TreeEntry, parents []plumbing.Hash, msg string, now time.Time) (plumbing.Hash, error) {
	h, _, err := st.writeCommitTrees(rootExtra, dirExtra, chunks, parents, msg, now)
	return h, err
}

// writeCommitTrees is writeCommit, also returning the two trees it wrote.
func (st *Store) writeCommitTrees(rootExtra, dirExtra, chunks []object.TreeEntry, parents []plumbing.Hash, msg string, now time.Time) (plumbing.Hash, []plumbing.Hash, error) {
	dir, err := st.db.putTree(sortTree(append(slices.Clone(dirExtra), chunks...)))
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	root, err := st.db.putTree(sortTree(append(slices.Clone(rootExtra), dirEntry(sessionDir, dir))))
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	sig := object.Signature{Name: committerName, Email: committerEmail, When: now.UTC()}
	h, err := st.db.putCommit(&object.Commit{
		Author:       sig,
		Committer:    sig,
		Message:      msg,
		TreeHash:     root,
		ParentHashes: parents,
	})
	return h, []plumbing.Hash{root, dir}, err
}

// sortTree orders tree entries as git requires: by name, a subtree's name
// compared as if it ended in "/".
func sortTree(es []object.TreeEntry) []object.TreeEntry {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(es, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	return es
}
