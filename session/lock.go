package session

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockOwner is who holds a writer lock, as written in the lock file: the
// pid, the host and, where the system tells it, the process's start time
// (field 22 of /proc/PID/stat, in clock ticks since boot), so that a pid
// the kernel reused for an unrelated process is not taken for the owner.
type lockOwner struct {
	pid   int
	host  string
	start string // "" when unknown (other systems, older locks)
}

func (o lockOwner) String() string { return fmt.Sprintf("process %d on %s", o.pid, o.host) }

func (o lockOwner) body() string {
	if o.start == "" {
		return fmt.Sprintf("%d %s\n", o.pid, o.host)
	}
	return fmt.Sprintf("%d %s %s\n", o.pid, o.host, o.start)
}

func parseOwner(b []byte) (lockOwner, bool) {
	f := strings.Fields(string(b))
	if len(f) != 2 && len(f) != 3 {
		return lockOwner{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return lockOwner{}, false
	}
	o := lockOwner{pid: pid, host: f[1]}
	if len(f) == 3 {
		o.start = f[2]
	}
	return o, true
}

// dead reports whether the owner is known to be gone: a process of this host
// that no longer exists, or whose pid now belongs to a process started at
// another time. An owner on another host is never known to be dead.
func (o lockOwner) dead(host string) bool {
	if o.host != host {
		return false
	}
	if errors.Is(syscall.Kill(o.pid, 0), syscall.ESRCH) {
		return true
	}
	if o.start == "" {
		return false
	}
	now, ok := procStart(o.pid)
	return ok && now != o.start
}

// procStart returns field 22 of /proc/PID/stat, the time the process
// started; ok is false where there is no /proc.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count the fields after its closing parenthesis (field 3 onwards).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

func self() lockOwner {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	me := lockOwner{pid: os.Getpid(), host: strings.Join(strings.Fields(host), "-")}
	me.start, _ = procStart(me.pid)
	return me
}

// Lock makes this process the session's only writer, through the lock file
// <gitdir>/decode/locks/<id>.lock naming the owner's pid and host. A lock left
// by a process that died on this host is reclaimed (see Reclaimed); one held
// by a live process, or by one on another host, is an ErrConflict naming it.
// Once locked, the session is reloaded if its ref moved since it was read.
func (s *Session) Lock() error {
	if s.lockPath != "" {
		return nil
	}
	path := s.store.lockFile(s.id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("lock session %s: %w", s.id, storageErr("create directory", filepath.Dir(path), err))
	}
	me := self()
	err := createWith(path, me.body())
	if errors.Is(err, fs.ErrExist) {
		err = s.reclaim(path, me)
	}
	if errors.Is(err, fs.ErrExist) { // another process took it while we looked
		err = fmt.Errorf("%w: session %s was locked meanwhile by another process", ErrConflict, s.id)
	}
	if err != nil {
		return fmt.Errorf("lock session %s: %w", s.id, storageErr("create", path, err))
	}
	s.lockPath, s.lockBody = path, me.body()
	if err := s.refresh(); err != nil {
		return errors.Join(fmt.Errorf("lock session %s: %w", s.id, err), s.Unlock())
	}
	return nil
}

// lockFile is the writer lock of session id.
func (s *Store) lockFile(id string) string {
	return filepath.Join(s.gitDir, "decode", "locks", id+".lock")
}

// WriterState says whether a session has a live writer.
type WriterState int

// Writer states.
const (
	// WriterNone: no process holds the session's lock.
	WriterNone WriterState = iota
	// WriterAlive: a process holds it and is alive, or runs on another host,
	// where decode cannot tell.
	WriterAlive
	// WriterDead: the process holding it died on this host.
	WriterDead
)

// Writer says whether session id is being written right now.
func (s *Store) Writer(id string) WriterState {
	b, err := os.ReadFile(s.lockFile(id))
	if err != nil {
		return WriterNone
	}
	owner, ok := parseOwner(b)
	if ok && owner.dead(self().host) {
		return WriterDead
	}
	return WriterAlive
}

// reclaim takes over the lock at path if its owner is dead. Only the process
// holding path+".reclaim" may remove a lock it does not own, so two processes
// reclaiming at once cannot both end up holding it.
func (s *Session) reclaim(path string, me lockOwner) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createWith(path, me.body()) // released meanwhile
	}
	if err != nil {
		return err
	}
	owner, ok := parseOwner(old)
	if !ok {
		return fmt.Errorf("%w: %s is held by an unknown owner (remove it if no decode is running)", ErrConflict, path)
	}
	if !owner.dead(me.host) {
		return fmt.Errorf("%w: session %s is being written by %s", ErrConflict, s.id, owner)
	}
	guard := path + ".reclaim"
	if err := takeGuard(guard, me); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: another process is reclaiming the lock of session %s", ErrConflict, s.id)
		}
		return err
	}
	defer os.Remove(guard)
	again, err := os.ReadFile(path)
	if err == nil && string(again) != string(old) {
		return fmt.Errorf("%w: session %s was locked meanwhile by another process", ErrConflict, s.id)
	}
	if err == nil {
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	if err := createWith(path, me.body()); err != nil {
		return err
	}
	s.reclaimed = fmt.Sprintf("reclaimed the lock of session %s from %s, which is gone", s.id, owner)
	// The owner may have died in the middle of a ref update and left git's
	// <ref>.lock behind. Only the session's lock holder updates its ref, so
	// that lock file is the dead owner's, and would refuse every append.
	if err := os.Remove(s.store.refs.path(s.Ref()) + ".lock"); err == nil {
		s.reclaimed += "; removed the ref update it left unfinished"
	}
	return nil
}

// takeGuard creates the reclaim guard. A guard left by a process that died
// while holding it is removed and taken; one held by a live process is
// waited for a moment, as a reclaim takes a few file operations.
func takeGuard(guard string, me lockOwner) error {
	var err error
	for range 50 {
		if err = createWith(guard, me.body()); !errors.Is(err, fs.ErrExist) {
			return err
		}
		b, rerr := os.ReadFile(guard)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if o, ok := parseOwner(b); ok && o.dead(me.host) {
			// Remove it only if it still holds what we read, so that a
			// guard another process just took is left alone.
			if again, err := os.ReadFile(guard); err == nil && bytes.Equal(again, b) {
				os.Remove(guard)
			}
			continue
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// Reclaimed returns a warning when Lock took over a lock whose owner was
// dead, and "" otherwise.
func (s *Session) Reclaimed() string { return s.reclaimed }

// Unlock releases the writer lock taken by Lock.
func (s *Session) Unlock() error {
	if s.lockPath == "" {
		return nil
	}
	path := s.lockPath
	s.lockPath = ""
	// The last appends' objects, if a prune removed them meanwhile, are
	// restored while this process still can (see objectDB.repair).
	repaired := s.store.db.repair(true)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("unlock session %s: %w", s.id, err)
	}
	if string(b) != s.lockBody {
		return fmt.Errorf("unlock session %s: %w: the lock now belongs to %q", s.id, ErrConflict, strings.TrimSpace(string(b)))
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("unlock session %s: %w", s.id, err)
	}
	return repaired
}

// refresh reloads the session if its ref moved since it was read.
func (s *Session) refresh() error {
	h, err := s.store.refs.read(refPrefix + s.id)
	if err != nil {
		return err
	}
	if h.IsZero() || h == s.tip {
		return nil
	}
	return s.load(h)
}

// createWith creates path holding body, failing with fs.ErrExist if it
// exists. The body is written to a temporary file first and hard-linked into
// place, so nobody ever sees the lock file empty.
func createWith(path, body string) error {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%s.tmp", path, hex.EncodeToString(rnd[:]))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		os.Remove(tmp) // a full disk can fail the write after the create
		return storageErr("create", tmp, err)
	}
	defer os.Remove(tmp)
	return os.Link(tmp, path)
}
