package session

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectDB reads and writes git objects through go-git. It serialises access
// (go-git's storage is not safe for concurrent use) and, when a read fails,
// re-reads the pack index once, because `git gc` may have packed or moved
// objects since the index was loaded.
//
// Loose objects are read directly: go-git hashes every object it reads twice
// with collision-detecting SHA-1, which was a third of the time spent opening
// a long session. Packed objects and alternates are read through go-git; objects are
// written loose by writeLoose.
type objectDB struct {
	mu      sync.Mutex
	st      *filesystem.Storage
	objects string    // the objects directory
	inflate sync.Pool // of *inflater, so that loose reads need no lock
	fsync   bool      // fsync loose objects and their directories (core.fsync)

	recentMu sync.Mutex
	recent   []written // the objects written last, oldest first
	repaired time.Time // when repair last checked them
}

// written is an object this process wrote, kept for a while to be
// written again if a `git prune --expire=now` removed it (see repair).
type written struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
	at   time.Time
}

// The objects kept for repair: the last recentMax, none older than
// recentAge; repair checks them at most every repairEvery (a stat each),
// so that a fast run of appends does not spend its time checking.
const (
	recentMax   = 256
	recentAge   = 10 * time.Second
	repairEvery = 50 * time.Millisecond
)

// remember records an object just written.
func (db *objectDB) remember(h plumbing.Hash, t plumbing.ObjectType, data []byte) {
	db.recentMu.Lock()
	defer db.recentMu.Unlock()
	now := time.Now()
	db.recent = append(db.recent, written{h, t, data, now})
	drop := max(len(db.recent)-recentMax, 0)
	for drop < len(db.recent) && now.Sub(db.recent[drop].at) > recentAge {
		drop++
	}
	db.recent = db.recent[drop:]
}

// repair writes again every recent object that is missing. The objects of
// an append are unreachable until its ref moves, and `git prune
// --expire=now` deletes every unreachable object whatever its age: a prune
// that walked the refs just before ours moved deletes what we committed,
// commits that later appends then name as parents. git's own commits run
// the same risk (its documentation calls --expire=now unsafe while
// anything writes); decode repairs it, as objects are content-addressed
// and writing one again restores it exactly. Append calls repair before it
// writes, Unlock (with force) once more at the end.
func (db *objectDB) repair(force bool) error {
	db.recentMu.Lock()
	if !force && time.Since(db.repaired) < repairEvery {
		db.recentMu.Unlock()
		return nil
	}
	db.repaired = time.Now()
	recent := slices.Clone(db.recent)
	db.recentMu.Unlock()
	for _, w := range recent {
		if db.has(w.h) {
			continue
		}
		if _, err := db.writeLoose(w.t, w.data); err != nil {
			return fmt.Errorf("restore %s %s removed by git prune: %w", w.t, w.h, err)
		}
	}
	return nil
}

// inflater is a zlib reader and a buffer reused between loose reads.
type inflater struct {
	zr  io.Reader
	buf bytes.Buffer
}

func newObjectDB(gitDir string) *objectDB {
	fs := osfs.New(gitDir)
	return &objectDB{
		st:      filesystem.NewStorage(fs, cache.NewObjectLRU(4*cache.MiByte)),
		objects: filepath.Join(gitDir, "objects"),
	}
}

// newScanDB returns an objectDB for reading many objects in a row: it keeps
// pack files open between reads (go-git otherwise reopens the pack for every
// object, which was most of the time List spent after `git gc`). Close it.
func newScanDB(gitDir string) *objectDB {
	fs := osfs.New(gitDir)
	return &objectDB{
		st: filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(cache.MiByte),
			filesystem.Options{MaxOpenDescriptors: 16}),
		objects: filepath.Join(gitDir, "objects"),
	}
}

// close releases the pack files a scan DB kept open.
func (db *objectDB) close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.st.Close()
}

// raw returns the content of object h, which must be of type t.
// Loose objects are read without the lock, so that List can read many
// commits at once.
func (db *objectDB) raw(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	data, found, err := db.loose(t, h)
	if found || err != nil {
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", t, h, err)
		}
		return data, nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	o, err := db.st.EncodedObject(t, h)
	if err != nil {
		db.st.Reindex()
		o, err = db.st.EncodedObject(t, h)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", t, h, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", t, h, err)
	}
	defer r.Close()
	data = make([]byte, 0, o.Size())
	buf := bytes.NewBuffer(data)
	if _, err := io.Copy(buf, r); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", t, h, err)
	}
	return buf.Bytes(), nil
}

// loose reads a loose object file: zlib of "<type> <size>\0<content>".
// found is false when there is no such file.
func (db *objectDB) loose(t plumbing.ObjectType, h plumbing.Hash) (data []byte, found bool, err error) {
	hex := h.String()
	f, err := os.Open(filepath.Join(db.objects, hex[:2], hex[2:]))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	defer f.Close()
	z, _ := db.inflate.Get().(*inflater)
	if z == nil {
		z = &inflater{}
	}
	defer db.inflate.Put(z)
	if z.zr == nil {
		z.zr, err = zlib.NewReader(f)
	} else {
		err = z.zr.(zlib.Resetter).Reset(f, nil)
	}
	if err != nil {
		z.zr = nil // a reader whose Reset failed is not reused
		return nil, true, err
	}
	z.buf.Reset()
	if _, err := z.buf.ReadFrom(z.zr); err != nil {
		return nil, true, err
	}
	raw := z.buf.Bytes()
	header, content, ok := bytes.Cut(raw, []byte{0})
	typ, size, _ := bytes.Cut(header, []byte{' '})
	if !ok || string(typ) != t.String() || string(size) != strconv.Itoa(len(content)) {
		return nil, true, fmt.Errorf("loose object is not a %s of the size it says: %.40q", t, header)
	}
	return bytes.Clone(content), true, nil
}

func (db *objectDB) commit(h plumbing.Hash) (*object.Commit, error) {
	data, err := db.raw(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	var c object.Commit
	if err := c.Decode(memoryObject(plumbing.CommitObject, data)); err != nil {
		return nil, fmt.Errorf("decode commit %s: %w", h, err)
	}
	c.Hash = h
	return &c, nil
}

func (db *objectDB) tree(h plumbing.Hash) (*object.Tree, error) {
	data, err := db.raw(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	var t object.Tree
	if err := t.Decode(memoryObject(plumbing.TreeObject, data)); err != nil {
		return nil, fmt.Errorf("decode tree %s: %w", h, err)
	}
	t.Hash = h
	return &t, nil
}

func (db *objectDB) blob(h plumbing.Hash) ([]byte, error) {
	return db.raw(plumbing.BlobObject, h)
}

func memoryObject(t plumbing.ObjectType, data []byte) *plumbing.MemoryObject {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(data) // writing to memory cannot fail
	return o
}

func (db *objectDB) put(o plumbing.EncodedObject) (plumbing.Hash, error) {
	r, err := o.Reader()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s: %w", o.Type(), err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s: %w", o.Type(), err)
	}
	h, err := db.writeLoose(o.Type(), data)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s: %w", o.Type(), err)
	}
	db.remember(h, o.Type(), data)
	return h, nil
}

// deflaters pools zlib writers at BestSpeed for loose objects.
var deflaters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return zw
}}

// writeLoose stores one loose object the way git does: zlib of
// "<type> <size>\x00<data>" in objects/xx/yyyy..., written to a temporary
// file inside objects/xx/ and renamed into place. Writing it here rather
// than through go-git halves the cost of an append: go-git compresses at
// the default level (the last chunk, up to 64 KiB, is written on every
// append) and creates its temporary files through several layers. Writing
// an object that already exists replaces it with the same bytes.
//
// The temporary file is created inside the fan-out directory, as git does,
// because `git prune` removes empty fan-out directories: a file renamed
// into a directory that vanished meanwhile fails, while a directory that
// holds our temporary file is not empty and stays. When the directory is
// missing (or pruned between our mkdir and our create), or `git prune
// --expire=now` removed the temporary file itself, the write starts over.
// The file and its directory are fsynced when core.fsync asks for loose
// objects. A failed write leaves no temporary file behind.
func (db *objectDB) writeLoose(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	hdr := t.String() + " " + strconv.Itoa(len(data)) + "\x00"
	sum := sha1.New()
	io.WriteString(sum, hdr)
	sum.Write(data)
	var h plumbing.Hash
	copy(h[:], sum.Sum(nil))
	var buf bytes.Buffer
	zw := deflaters.Get().(*zlib.Writer)
	zw.Reset(&buf)
	io.WriteString(zw, hdr)
	zw.Write(data)
	err := zw.Close()
	deflaters.Put(zw)
	if err != nil {
		return h, err
	}
	for attempt := 0; ; attempt++ {
		err = db.placeLoose(h, buf.Bytes())
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt >= 100 {
			return h, err
		}
	}
}

// placeLoose writes one compressed object through a temporary file in its
// fan-out directory. An fs.ErrNotExist means the directory or the
// temporary file vanished under us (git prune) and the caller tries again.
func (db *objectDB) placeLoose(h plumbing.Hash, z []byte) error {
	hex := h.String()
	dir := filepath.Join(db.objects, hex[:2])
	path := filepath.Join(dir, hex[2:])
	// Plain system calls skip os.File's poller registration, which
	// regular files refuse.
	tmp := filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36))
	fd, err := syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o444)
	if errors.Is(err, syscall.ENOENT) {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return storageErr("create directory", dir, err)
		}
		if db.fsync {
			if err := syncDir(db.objects); err != nil {
				return storageErr("fsync", db.objects, err)
			}
		}
		fd, err = syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o444)
	}
	if err != nil {
		return storageErr("create", tmp, &fs.PathError{Op: "create", Path: tmp, Err: err})
	}
	for b := z; len(b) > 0 && err == nil; {
		var n int
		n, err = syscall.Write(fd, b)
		if err == nil && n <= 0 {
			err = io.ErrShortWrite
		}
		if err == nil {
			b = b[n:]
		}
	}
	if err == nil && db.fsync {
		err = syscall.Fsync(fd)
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return storageErr("write", tmp, &fs.PathError{Op: "write", Path: tmp, Err: err})
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return storageErr("rename", tmp, err)
	}
	if db.fsync {
		if err := syncDir(dir); err != nil {
			return storageErr("fsync", dir, err)
		}
	}
	return nil
}

// has reports whether object h is in the database, loose or packed.
func (db *objectDB) has(h plumbing.Hash) bool {
	hex := h.String()
	if _, err := os.Stat(filepath.Join(db.objects, hex[:2], hex[2:])); err == nil {
		return true
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.st.HasEncodedObject(h) == nil {
		return true
	}
	db.st.Reindex()
	return db.st.HasEncodedObject(h) == nil
}

func (db *objectDB) putBlob(data []byte) (plumbing.Hash, error) {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	if _, err := o.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	return db.put(o)
}

func (db *objectDB) putTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	o := &plumbing.MemoryObject{}
	t := object.Tree{Entries: entries}
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	return db.put(o)
}

func (db *objectDB) putCommit(c *object.Commit) (plumbing.Hash, error) {
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode commit: %w", err)
	}
	return db.put(o)
}

// dirEntry is a tree entry for a subtree.
func dirEntry(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
}

// fileEntry is a tree entry for a regular file.
func fileEntry(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
}
