//go:build !linux

package session

// fsWatcher is not available here: every snapshot scans the whole tree.
type fsWatcher struct{}

func newFSWatcher(string, func(string) bool) *fsWatcher { return nil }

func (w *fsWatcher) take() (paths []string, full, ok bool) { return nil, true, false }

func (w *fsWatcher) close() {}
