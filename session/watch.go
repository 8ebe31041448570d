package session

import (
	"context"
	"fmt"
	"os"
)

// Tips returns every readable session's tip commit (id → hex hash), from
// the refs alone: one directory read and packed-refs, no commit is read.
// Watchers compare two calls to see which sessions appeared or moved.
func (s *Store) Tips(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	refs, _, err := s.refs.sessions()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(refs))
	for id, h := range refs {
		out[id] = h.String()
	}
	return out, nil
}

// TipOf returns the tip commit of the session with the full id, as a hex
// hash, reading its ref alone ("" when it has none). It is cheap enough to
// call a few times a second to follow a running session.
func (s *Store) TipOf(id string) (string, error) {
	if !validName(id) {
		return "", nil
	}
	h, err := s.refs.read(refPrefix + id)
	if err != nil || h.IsZero() {
		return "", err
	}
	return h.String(), nil
}

// RefsStamp returns a value that changes whenever a session's ref may
// have changed: the modification times of the sessions' ref directory
// (git renames a ref's lock file into it on every update) and of
// packed-refs. Two stat calls, so a watcher can poll it often and call
// Tips only when it moved.
func (s *Store) RefsStamp() string {
	stamp := func(p string) string {
		fi, err := os.Stat(p)
		if err != nil {
			return "-"
		}
		return fmt.Sprintf("%d.%d", fi.ModTime().UnixNano(), fi.Size())
	}
	return stamp(s.refs.path(refPrefix)) + "/" + stamp(s.refs.path("packed-refs"))
}
