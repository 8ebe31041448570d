package session

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a session store held in memory, for tests that need a store
// but not git. It behaves as the git store does for what Sessions offers
// (ids, numbering, conflicts, locks, listing, forks), which the
// conformance suite in session/storetest checks; it neither redacts nor
// keeps anything past the process.
type Memory struct {
	mu       sync.Mutex
	now      func() time.Time
	sessions map[string]*memRecord
	locks    map[string]*memLog // the Log holding each session's lock
}

// memRecord is a session as committed: its entries and a version that
// every append moves, as a commit moves a ref.
type memRecord struct {
	entries []Entry
	version int
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, sessions: map[string]*memRecord{}, locks: map[string]*memLog{}}
}

// SetClock replaces the clock used for timestamps and new ids.
func (m *Memory) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

// Create returns a new, empty session with a fresh id.
func (m *Memory) Create(ctx context.Context) (Log, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for range 8 {
		id, err := newID(m.now())
		if err != nil {
			return nil, err
		}
		if _, taken := m.sessions[id]; !taken {
			m.sessions[id] = &memRecord{}
			return &memLog{m: m, id: id}, nil
		}
	}
	return nil, fmt.Errorf("create session: no free id: %w", ErrConflict)
}

// Open loads the session ref names.
func (m *Memory) Open(ctx context.Context, ref string) (Log, error) {
	id, err := m.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.sessions[id]
	return &memLog{m: m, id: id, entries: slices.Clone(rec.entries), version: rec.version}, nil
}

// Resolve returns the id of the session ref names.
func (m *Memory) Resolve(ctx context.Context, ref string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ref = trimRefName(strings.TrimSpace(ref))
	if ref == "" {
		return "", fmt.Errorf("empty session reference")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, ok := m.sessions[ref]; ok && len(rec.entries) > 0 {
		return ref, nil
	}
	return pick(ref, m.idsByAge())
}

// idsByAge returns the ids of the sessions with entries, newest first.
func (m *Memory) idsByAge() []string {
	var ids []string
	for id, rec := range m.sessions {
		if len(rec.entries) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, _ := idTime(ids[i])
		b, _ := idTime(ids[j])
		if !a.Equal(b) {
			return a.After(b)
		}
		return ids[i] > ids[j]
	})
	return ids
}

// List describes every session, newest first.
func (m *Memory) List(ctx context.Context) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.idsByAge()
	infos := make([]Info, len(ids))
	for i, id := range ids {
		infos[i] = m.info(id, m.sessions[id].entries)
	}
	return infos, nil
}

// info describes session id holding es; m.mu is held.
func (m *Memory) info(id string, es []Entry) Info {
	var mt meta
	for _, e := range es {
		mt.observe(e)
	}
	in := Info{ID: id, Model: mt.modelName(), Title: mt.title, Status: mt.status, Entries: mt.entries, Turns: mt.turns}
	if n := len(es); n > 0 {
		in.Created, in.Updated = es[0].TS, es[n-1].TS
	}
	if t, ok := idTime(id); ok {
		in.Created = t
	}
	if in.Status == StatusRunning && m.locks[id] == nil {
		in.Status = StatusCrashed // no writer holds it: as a git session whose writer is gone
	}
	return in
}

// Fork makes a session sharing ref's entries up to entry at and records
// its fork entry.
func (m *Memory) Fork(ctx context.Context, ref string, at int, d ForkData) (Log, error) {
	src, err := m.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	es := m.sessions[src].entries
	idx := len(es) - 1
	if at > 0 {
		idx = slices.IndexFunc(es, func(e Entry) bool { return e.ID == at })
		if idx < 0 {
			m.mu.Unlock()
			return nil, fmt.Errorf("fork %s: no entry %d (last is %d)", src, at, es[len(es)-1].ID)
		}
	}
	kept := slices.Clone(es[:idx+1])
	m.mu.Unlock()
	l, err := m.Create(ctx)
	if err != nil {
		return nil, err
	}
	f := l.(*memLog)
	m.mu.Lock()
	m.sessions[f.id] = &memRecord{entries: kept, version: 1}
	f.entries, f.version = slices.Clone(kept), 1
	m.mu.Unlock()
	if err := f.Lock(); err != nil {
		return nil, err
	}
	err = f.Append(ctx, forkEntry(src, kept[len(kept)-1].ID, d))
	if uerr := f.Unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", src, err)
	}
	return f, nil
}

// memLog is one session of a Memory as one reader sees it.
type memLog struct {
	m       *Memory
	id      string
	entries []Entry
	version int
	locked  bool
}

func (l *memLog) ID() string       { return l.id }
func (l *memLog) Entries() []Entry { return slices.Clone(l.entries) }

// Append numbers, stamps and records es as the git store does: each line
// is encoded and read back, so what a later Open returns is what Append
// kept.
func (l *memLog) Append(ctx context.Context, es ...Entry) error {
	if len(es) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append to %s: %w", l.id, err)
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	rec := l.m.sessions[l.id]
	if rec.version != l.version {
		return fmt.Errorf("append to %s: %w: the session moved since it was read", l.id, ErrConflict)
	}
	now := l.m.now().UTC()
	next, parent := 1, 0
	for _, e := range l.entries {
		next = max(next, e.ID+1)
	}
	if n := len(l.entries); n > 0 {
		parent = l.entries[n-1].ID
	}
	added := make([]Entry, len(es))
	for i, e := range es {
		e.V, e.ID, e.Parent = Version, next, parent
		if e.TS.IsZero() {
			e.TS = now
		}
		e.TS = e.TS.UTC()
		line, err := encodeLine(e)
		if err != nil {
			return fmt.Errorf("append to %s: entry %d (%s): %w", l.id, next, e.Type, err)
		}
		back, err := parseEntry(line)
		if err != nil {
			return fmt.Errorf("append to %s: entry %d (%s): %w", l.id, next, e.Type, err)
		}
		back.Note = e.Note
		added[i] = back
		parent = next
		next++
	}
	l.entries = append(l.entries, added...)
	l.version++
	rec.entries, rec.version = slices.Clone(l.entries), l.version
	return nil
}

func (l *memLog) Decide(ctx context.Context, ds ...Decision) error {
	es, err := decisionEntries(l.id, l.entries, ds)
	if err != nil {
		return err
	}
	return l.Append(ctx, es...)
}

// Lock makes l the session's one writer and reads what moved since.
func (l *memLog) Lock() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.locked {
		return nil
	}
	if holder := l.m.locks[l.id]; holder != nil {
		return fmt.Errorf("lock session %s: %w: session %s is being written by another writer", l.id, ErrConflict, l.id)
	}
	l.m.locks[l.id], l.locked = l, true
	rec := l.m.sessions[l.id]
	l.entries, l.version = slices.Clone(rec.entries), rec.version
	return nil
}

// Unlock releases the lock Lock took.
func (l *memLog) Unlock() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if !l.locked {
		return nil
	}
	l.locked = false
	if l.m.locks[l.id] != l {
		return fmt.Errorf("unlock session %s: %w: the lock now belongs to another writer", l.id, ErrConflict)
	}
	delete(l.m.locks, l.id)
	return nil
}

func (l *memLog) Info() Info {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.m.info(l.id, l.entries)
}
