package agent

import (
	"context"
	"time"

	"decode/session"
)

// MemoryLog is a Log kept in memory, for runs with --no-session.
type MemoryLog struct {
	entries []session.Entry
}

// Entries implements Log.
func (m *MemoryLog) Entries() []session.Entry { return m.entries }

// Append implements Log, numbering entries as the git store does.
func (m *MemoryLog) Append(_ context.Context, es ...session.Entry) error {
	for _, e := range es {
		e.V = session.Version
		e.ID = len(m.entries) + 1
		e.Parent = len(m.entries)
		e.TS = time.Now().UTC()
		m.entries = append(m.entries, e)
	}
	return nil
}
