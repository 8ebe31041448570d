package session

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// refPrefix is where session refs live; each session is refPrefix + id.
const refPrefix = "refs/decode/sessions/"

// refStore reads and updates refs of one git directory the way git does:
// loose ref files first, then packed-refs, and updates through git's
// lock-file protocol so that they serialise with `git update-ref`.
type refStore struct {
	gitDir string
	cfg    writeConfig
}

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

// sessions returns every session ref (id → tip). Like git, it reads the
// loose refs before packed-refs: `git pack-refs` writes packed-refs before
// it deletes the loose files, so a ref being packed is always found in one
// of the two, while reading packed-refs first could miss it in both.
// Loose refs that hold no commit hash are returned in broken (id → what
// is wrong), as git reports them ("ignoring broken ref"), and not listed.
func (r refStore) sessions() (refs map[string]plumbing.Hash, broken map[string]string, err error) {
	refs, broken = map[string]plumbing.Hash{}, map[string]string{}
	dir := r.path(refPrefix)
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		id := e.Name()
		if e.IsDir() || strings.HasSuffix(id, ".lock") || strings.HasPrefix(id, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while we listed (packed meanwhile: read below)
		}
		seen[id] = true
		if err != nil {
			broken[id] = err.Error()
			continue
		}
		h, err := parseLooseRef(refPrefix+id, b)
		if err != nil {
			broken[id] = brokenRef(b)
			continue
		}
		refs[id] = h
	}
	packed, err := r.packed(refPrefix)
	if err != nil {
		return nil, nil, err
	}
	for name, h := range packed {
		if id := strings.TrimPrefix(name, refPrefix); !strings.Contains(id, "/") && !seen[id] {
			refs[id] = h
		}
	}
	return refs, broken, nil
}

// brokenRef says what is wrong with a loose ref's content.
func brokenRef(b []byte) string {
	if len(strings.TrimSpace(string(b))) == 0 {
		return "the ref file is empty"
	}
	return fmt.Sprintf("the ref file holds no commit hash: %.40q", b)
}

// update moves ref name from old to new with git's lock-file protocol: create
// <ref>.lock exclusively, compare the current value with old (the zero hash
// meaning "must not exist"), write the lock (fsynced when core.fsync asks for
// references), rename it over the ref. A lock held by another process is
// waited for, as git waits (core.filesRefLockTimeout, 100 ms by default):
// `git pack-refs` holds it for a moment while it prunes a loose ref. A lock
// still held after that, or a value other than old, is an ErrConflict.
func (r refStore) update(name string, old, new plumbing.Hash) (err error) {
	p := r.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("update ref %s: %w", name, storageErr("create directory", filepath.Dir(p), err))
	}
	lock := p + ".lock"
	f, err := r.lockRef(lock)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("update ref %s: %w: %s exists after waiting %s (another process is updating it; if none is, remove the file)", name, ErrConflict, lock, r.cfg.refLockTimeout)
	}
	if err != nil {
		return fmt.Errorf("update ref %s: %w", name, storageErr("create", lock, err))
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
		return fmt.Errorf("update ref %s: %w: %w: it is at %s, expected %s", name, ErrConflict, errRefMoved, short(cur), short(old))
	}
	if _, err := f.Write([]byte(new.String() + "\n")); err != nil {
		return fmt.Errorf("update ref %s: %w", name, storageErr("write", lock, err))
	}
	if r.cfg.fsyncRefs {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("update ref %s: %w", name, storageErr("fsync", lock, err))
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("update ref %s: %w", name, storageErr("write", lock, err))
	}
	if err := os.Rename(lock, p); err != nil {
		return fmt.Errorf("update ref %s: %w", name, storageErr("rename", lock, err))
	}
	renamed = true
	if r.cfg.fsyncRefs {
		if err := syncDir(filepath.Dir(p)); err != nil {
			return fmt.Errorf("update ref %s: %w", name, storageErr("fsync", filepath.Dir(p), err))
		}
	}
	return nil
}

// lockRef creates the lock file exclusively, retrying while another
// process holds it for up to the configured timeout, with the randomised
// backoff git uses (about 1, 4, 9, 16 ... ms), and making its directory
// again when git removed it meanwhile.
func (r refStore) lockRef(lock string) (*os.File, error) {
	deadline := time.Now().Add(r.cfg.refLockTimeout)
	for n, missing := 1, 0; ; n++ {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrNotExist) && missing < 100 {
			// `git pack-refs` removes the directories it emptied: make
			// it again, as git's own raceproof_create_file does.
			missing++
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				return nil, err
			}
			n--
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		wait := time.Duration(n*n) * time.Millisecond * time.Duration(750+rand.IntN(500)) / 1000
		time.Sleep(min(wait, left))
	}
}

// syncDir fsyncs a directory, so that a file renamed into it survives a
// power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
