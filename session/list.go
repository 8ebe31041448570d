package session

import (
	"context"
	"sort"
	"time"
)

// Info describes a session as List shows it, read from its tip commit alone.
type Info struct {
	ID      string
	Created time.Time
	Updated time.Time
	Model   string
	Title   string
	Status  string
	Entries int
	Turns   int
}

// List returns every session, newest first (by creation, as "@~N" counts).
// It reads the refs and each tip commit's trailers, never the JSONL.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	refs, err := s.refs.sessions()
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(refs))
	for id, h := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := s.db.commit(h)
		if err != nil {
			return nil, err
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
		infos = append(infos, info)
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
