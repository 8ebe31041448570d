package session

import "context"

// Sessions is what commands and the agent need of a session store: make,
// find, list, open and branch sessions. The git store (Store.Sessions) and
// Memory implement it, and one conformance suite (session/storetest) runs
// against both, so a test that needs a store but not git can take Memory
// and trust that it behaves as the real one does.
type Sessions interface {
	// Create returns a new session with a fresh id; it is listed, and
	// found by Open, from its first append.
	Create(ctx context.Context) (Log, error)
	// Open loads the session ref names (see Resolve).
	Open(ctx context.Context, ref string) (Log, error)
	// Resolve returns the id of the session ref names: a full id, a unique
	// prefix of one, "@" for the newest or "@~N" for the N-th before it. It
	// fails with *NotFoundError or *AmbiguousError.
	Resolve(ctx context.Context, ref string) (string, error)
	// List describes every session, newest first.
	List(ctx context.Context) ([]Info, error)
	// Fork makes a session sharing ref's entries up to entry at (0: all)
	// and records d (From and At filled in) as its fork entry.
	Fork(ctx context.Context, ref string, at int, d ForkData) (Log, error)
}

// Log is one session of a Sessions store. Append numbers and stamps the
// entries and fails with ErrConflict, changing nothing, when the session
// moved since this Log read it; Lock makes this Log the session's one
// writer (ErrConflict while another holds it) and reads what moved.
type Log interface {
	ID() string
	Entries() []Entry
	Append(ctx context.Context, es ...Entry) error
	// Decide records decisions on the session's approval requests.
	Decide(ctx context.Context, ds ...Decision) error
	Lock() error
	Unlock() error
	// Info describes the session as List does.
	Info() Info
}

// Sessions returns the store as the Sessions interface.
func (s *Store) Sessions() Sessions { return gitSessions{s} }

// gitSessions adapts Store, whose methods return the concrete *Session
// (commands use its git-only parts: snapshots, JSONL, problems).
type gitSessions struct{ st *Store }

func (g gitSessions) Create(ctx context.Context) (Log, error) {
	return asLog(g.st.Create(ctx))
}

func (g gitSessions) Open(ctx context.Context, ref string) (Log, error) {
	return asLog(g.st.Open(ctx, ref))
}

func (g gitSessions) Resolve(ctx context.Context, ref string) (string, error) {
	return g.st.Resolve(ctx, ref)
}

func (g gitSessions) List(ctx context.Context) ([]Info, error) { return g.st.List(ctx) }

func (g gitSessions) Fork(ctx context.Context, ref string, at int, d ForkData) (Log, error) {
	return asLog(g.st.Fork(ctx, ref, at, d))
}

// asLog keeps a nil *Session from becoming a non-nil Log.
func asLog(s *Session, err error) (Log, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

var (
	_ Sessions = gitSessions{}
	_ Sessions = (*Memory)(nil)
	_ Log      = (*Session)(nil)
	_ Log      = (*memLog)(nil)
)
