package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Info describes a session as List shows it, read from its tip commit alone.
type Info struct {
	ID      string
	Created time.Time
	Updated time.Time
	Model   string
	Title   string
	Status  Status
	Entries int
	Turns   int
	// Damage says why the session cannot be read, when it cannot: its ref
	// holds no commit hash (git says "ignoring broken ref"), or its tip
	// commit is missing or unreadable. The other fields are then empty.
	Damage string
	// BrokenRef is set when Damage is about the ref itself.
	BrokenRef bool
}

// List returns every session, newest first (by creation, as "@~N" counts).
// It reads the refs and each tip commit's trailers, never the JSONL; the
// commits are read by a few goroutines at once, as listing is mostly waiting
// on the file system. A session whose ref or tip cannot be read is listed
// with its Damage and does not keep the others from listing.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	refs, broken, err := s.refs.sessions()
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(refs))
	for id := range refs {
		ids = append(ids, id)
	}
	infos := make([]Info, len(ids), len(ids)+len(broken))
	workers := min(listWorkers, max(len(ids)/64, 1))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker reads packs through its own go-git storage, which
			// is not safe for concurrent use.
			db := newScanDB(s.gitDir)
			defer db.close()
			for i := w; i < len(ids); i += workers {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				infos[i] = info(db, ids[i], refs[ids[i]])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range infos {
		infos[i] = s.orphaned(infos[i], refs[infos[i].ID])
	}
	for id, why := range broken {
		in := Info{ID: id, Damage: fmt.Sprintf("ignoring broken ref %s%s: %s", refPrefix, id, why), BrokenRef: true}
		if t, ok := idTime(id); ok {
			in.Created, in.Updated = t, t
		}
		infos = append(infos, in)
	}
	sort.Slice(infos, func(i, j int) bool {
		a, b := infos[i], infos[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.ID > b.ID
	})
	return infos, nil
}

// orphaned marks a running session whose writer is gone (killed, or
// killed by SIGPIPE under `| head`) as crashed; decode resume continues
// it. tip is the commit in was read from. The lock is looked at before the
// ref is read again: a writer that ended between the two reads moved the
// ref before it let go of the lock, so its new status is seen.
func (s *Store) orphaned(in Info, tip plumbing.Hash) Info {
	if in.Status != StatusRunning || s.Writer(in.ID) == WriterAlive {
		return in
	}
	if h, err := s.refs.read(refPrefix + in.ID); err == nil && !h.IsZero() && h != tip {
		if again := info(s.db, in.ID, h); again.Damage == "" {
			in = again
		}
		if in.Status != StatusRunning || s.Writer(in.ID) == WriterAlive {
			return in
		}
	}
	in.Status = StatusCrashed
	return in
}

// listWorkers bounds the goroutines List reads commits with.
const listWorkers = 4

// info describes session id from its tip commit h; an unreadable tip is
// reported as the session's Damage.
func info(db *objectDB, id string, h plumbing.Hash) Info {
	c, err := db.commit(h)
	if err != nil {
		in := Info{ID: id, Damage: fmt.Sprintf("its tip commit cannot be read: %v", err)}
		if t, ok := idTime(id); ok {
			in.Created, in.Updated = t, t
		}
		return in
	}
	m := parseTrailers(c.Message)
	info := Info{
		ID:      id,
		Updated: c.Committer.When.UTC(),
		Model:   m.model,
		Title:   m.title,
		Status:  m.status,
		Entries: m.entries,
		Turns:   m.turns,
	}
	if t, ok := idTime(id); ok {
		info.Created = t
	} else {
		info.Created = info.Updated
	}
	return info
}

// Info describes the session as List would, from what is loaded.
func (s *Session) Info() Info {
	info := Info{
		ID:      s.id,
		Model:   s.meta.modelName(),
		Title:   s.meta.title,
		Status:  s.meta.status,
		Entries: s.meta.entries,
		Turns:   s.meta.turns,
	}
	if n := len(s.entries); n > 0 {
		info.Created, info.Updated = s.entries[0].TS, s.entries[n-1].TS
	}
	if t, ok := idTime(s.id); ok {
		info.Created = t
	}
	if info.Status == StatusRunning && s.lockPath == "" && s.store.Writer(s.id) != WriterAlive {
		info.Status = StatusCrashed
	}
	return info
}

// Tip returns the commit the session's ref pointed at when it was last read
// or written, as a hex hash ("" before the first append of a new session).
func (s *Session) Tip() string {
	if s.tip.IsZero() {
		return ""
	}
	return s.tip.String()
}
