package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Store keeps sessions in a git object database: the repository decode runs
// in (its common git dir, shared by linked worktrees), or a bare repository
// of its own outside any repository.
type Store struct {
	gitDir string
	refs   refStore
	db     *objectDB
	now    func() time.Time
	// redaction is the redactor lines go through (see SetRedactor).
	redaction atomic.Pointer[redaction]
}

// OpenStore opens the store for dir, where decode runs. Inside a git
// repository (found as git finds it, honouring GIT_DIR and
// GIT_CEILING_DIRECTORIES) sessions go into its common git dir; outside one
// into a bare repository at $DECODE_STORE, else $XDG_STATE_HOME/decode,
// else $HOME/.local/state/decode, created on first use.
func OpenStore(dir string, env Env) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real // git walks up the physical path, as getcwd reports it
	}
	gd, err := findGitDir(abs, env)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if gd != "" {
		gd = commonDir(gd, env)
	} else {
		if gd, err = storeDir(env); err != nil {
			return nil, err
		}
		if err := initBare(gd); err != nil {
			return nil, err
		}
	}
	if err := checkFormat(gd); err != nil {
		return nil, fmt.Errorf("open session store %s: %w", gd, err)
	}
	cfg := readWriteConfig(gd, env)
	db := newObjectDB(gd)
	db.fsync = cfg.fsyncObjects
	return &Store{gitDir: gd, refs: refStore{gitDir: gd, cfg: cfg}, db: db, now: time.Now}, nil
}

// checkFormat refuses repositories whose objects or refs go-git and the
// loose-ref protocol cannot handle.
func checkFormat(gitDir string) error {
	f, err := os.Open(filepath.Join(gitDir, "config"))
	if err != nil {
		return nil // git itself tolerates a missing config
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		setting := strings.ToLower(strings.Join(strings.Fields(sc.Text()), ""))
		if setting == "objectformat=sha256" || setting == "refstorage=reftable" {
			return fmt.Errorf("unsupported repository format (%s)", setting)
		}
	}
	return nil
}

// GitDir returns the git directory the sessions are stored in.
func (s *Store) GitDir() string { return s.gitDir }

// Store returns the store the session belongs to.
func (s *Session) Store() *Store { return s.store }

// SetClock replaces the clock used for entry timestamps, commit times and
// new ids (tests use it for stable output).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

func (s *Store) clock() time.Time { return s.now() }

// Create returns a new, empty session with a fresh id. Its ref is written by
// its first Append.
func (s *Store) Create(ctx context.Context) (*Session, error) {
	for range 8 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, err := newID(s.clock())
		if err != nil {
			return nil, err
		}
		h, err := s.refs.read(refPrefix + id)
		if err != nil {
			return nil, err
		}
		if h.IsZero() {
			return &Session{store: s, id: id}, nil
		}
	}
	return nil, fmt.Errorf("create session: no free id: %w", ErrConflict)
}

// Open loads the session named by ref: a full id, a unique prefix of one,
// "@" for the newest session or "@~N" for the N-th before it.
func (s *Store) Open(ctx context.Context, ref string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, h, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	sess := &Session{store: s, id: id}
	if err := sess.load(h); err != nil {
		return nil, err
	}
	return sess, nil
}

// Resolve returns the id of the session ref names (as Open reads it)
// without loading the session.
func (s *Store) Resolve(ctx context.Context, ref string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	id, _, err := s.resolve(ref)
	return id, err
}

// resolve turns a session reference into an id and its tip.
func (s *Store) resolve(ref string) (string, plumbing.Hash, error) {
	ref = trimRefName(strings.TrimSpace(ref))
	if ref == "" {
		return "", plumbing.ZeroHash, fmt.Errorf("empty session reference")
	}
	if validName(ref) {
		// The common case, a full id, costs one file read.
		h, err := s.refs.read(refPrefix + ref)
		if err != nil {
			return "", plumbing.ZeroHash, err
		}
		if !h.IsZero() {
			return ref, h, nil
		}
	}
	refs, _, err := s.refs.sessions()
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	id, err := pick(ref, s.byAge(refs))
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	return id, refs[id], nil
}

// pick finds the session ref names among ids (newest first): "@~N" by
// position, else the one id ref is a prefix of.
func pick(ref string, ids []string) (string, error) {
	if n, ok := parseRelative(ref); ok {
		if n >= len(ids) {
			return "", &NotFoundError{Ref: ref, Candidates: head(ids, 5)}
		}
		return ids[n], nil
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", &NotFoundError{Ref: ref, Candidates: head(ids, 5)}
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{Ref: ref, Candidates: matches}
}

// parseRelative reads "@" (0) and "@~N" (N).
func parseRelative(ref string) (int, bool) {
	if ref == "@" {
		return 0, true
	}
	rest, ok := strings.CutPrefix(ref, "@~")
	if !ok {
		return 0, false
	}
	if rest == "" {
		return 1, true // like git's HEAD~
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// validName reports whether name can be a session's ref name component.
func validName(name string) bool {
	if name == "" || name[0] == '.' || strings.HasSuffix(name, ".lock") || strings.Contains(name, "..") {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`/\~^:?*[@{`, r) {
			return false
		}
	}
	return true
}

// byAge returns the session ids newest first. Ids made by this package carry
// their creation time; for others the tip's commit time stands in.
func (s *Store) byAge(refs map[string]plumbing.Hash) []string {
	type aged struct {
		id      string
		created time.Time
	}
	list := make([]aged, 0, len(refs))
	for id, h := range refs {
		t, ok := idTime(id)
		if !ok {
			if c, err := s.db.commit(h); err == nil {
				t = c.Committer.When
			}
		}
		list = append(list, aged{id, t})
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].created.Equal(list[j].created) {
			return list[i].created.After(list[j].created)
		}
		return list[i].id > list[j].id
	})
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.id
	}
	return ids
}

func head(ids []string, n int) []string { return ids[:min(n, len(ids))] }
