package session

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
)

// refPrefix is where session refs live; each session is refPrefix + id.
const refPrefix = "refs/decode/sessions/"

// refStore reads and updates refs of one git directory the way git does:
// loose ref files first, then packed-refs, and updates through git's
// lock-file protocol so that they serialise with `git update-ref`.
type refStore struct{ gitDir string }

func (r refStore) path(name string) string {
	return filepath.Join(r.gitDir, filepath.FromSlash(name))
}

// read returns the value of ref name, or the zero hash when it does not exist.
func (r refStore) read(name string) (plumbing.Hash, error) {
	b, err := os.ReadFile(r.path(name))
	switch {
	case err == nil:
		return parseLooseRef(name, b)
	case errors.Is(err, fs.ErrNotExist), isNotDir(err):
		packed, err := r.packed(name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return packed[name], nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("read ref %s: %w", name, err)
	}
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

func parseLooseRef(name string, b []byte) (plumbing.Hash, error) {
	s := strings.TrimSpace(string(b))
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash, fmt.Errorf("read ref %s: not a commit hash: %q", name, s)
	}
	return plumbing.NewHash(s), nil
}

// packed returns the refs in packed-refs whose names start with prefix.
func (r refStore) packed(prefix string) (map[string]plumbing.Hash, error) {
	refs := map[string]plumbing.Hash{}
	f, err := os.Open(filepath.Join(r.gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return refs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		if name := string(line[41:]); strings.HasPrefix(name, prefix) {
			refs[name] = plumbing.NewHash(string(line[:40]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	return refs, nil
}

// sessions returns every session ref (id → tip), loose refs overriding packed ones.
func (r refStore) sessions() (map[string]plumbing.Hash, error) {
	packed, err := r.packed(refPrefix)
	if err != nil {
		return nil, err
	}
	refs := make(map[string]plumbing.Hash, len(packed))
	for name, h := range packed {
		if id := strings.TrimPrefix(name, refPrefix); !strings.Contains(id, "/") {
			refs[id] = h
		}
	}
	dir := r.path(refPrefix)
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	for _, e := range ents {
		id := e.Name()
		if e.IsDir() || strings.HasSuffix(id, ".lock") || strings.HasPrefix(id, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while we listed
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		if h, err := parseLooseRef(refPrefix+id, b); err == nil {
			refs[id] = h
		}
	}
	return refs, nil
}

// update moves ref name from old to new with git's lock-file protocol: create
// <ref>.lock exclusively, compare the current value with old (the zero hash
// meaning "must not exist"), write and fsync the lock, rename it over the ref.
// A held lock or a value other than old is an ErrConflict.
func (r refStore) update(name string, old, new plumbing.Hash) (err error) {
	p := r.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	lock := p + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("update ref %s: %w: %s exists (another process is updating it)", name, ErrConflict, lock)
	}
	if err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(lock)
		}
	}()
	cur, err := r.read(name)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("update ref %s: %w: it is at %s, expected %s", name, ErrConflict, short(cur), short(old))
	}
	if _, err := f.Write([]byte(new.String() + "\n")); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if err := os.Rename(lock, p); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	renamed = true
	return nil
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}

// trimRefName accepts "refs/decode/sessions/<id>" where an id is expected.
func trimRefName(ref string) string {
	return strings.TrimPrefix(ref, refPrefix)
}
