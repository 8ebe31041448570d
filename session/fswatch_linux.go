package session

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Limits on the work-tree watcher: past them snapshots scan the whole tree,
// as they do without a watcher.
const (
	// maxWatchedDirs is the most directories one run watches: each takes
	// an inotify watch, a per-user kernel resource shared with editors.
	maxWatchedDirs = 20_000
	// maxChangedPaths is the most changed paths a snapshot hands to git
	// as pathspecs; a bigger change (a build, a checkout) is scanned whole.
	maxChangedPaths = 256
)

// watchMask is what the watcher hears of: any change to an entry of a
// directory (content, mode, times, creation, removal, renames), and the
// directory itself going away.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// fsWatcher follows a work tree with inotify for one run, so that a
// snapshot asks git only about the paths that changed since the last one
// instead of stat'ing every file. The kernel queues an event before the
// system call that changed a file returns, so once a tool's process has
// been waited for, draining the queue sees all it did. What inotify does
// not report (writes through a shared mmap, changes made through another
// mount of a network file system) is caught by the next full scan, which
// each run starts with.
type fsWatcher struct {
	fd   int
	top  string
	skip func(rel string) bool // directories not watched, relative to top
	wds  map[int32]string      // watch descriptor → directory ("" is top)
	dirs map[string]int32      // directory → watch descriptor
	// changed holds the paths changed since the last take; lost is set
	// when some change may not be in it (a queue overflow, a directory
	// that could not be watched), so the next take asks for a full scan.
	changed map[string]bool
	lost    bool
	buf     []byte
}

// newFSWatcher watches every directory under top (except those skip
// names), or returns nil when inotify is not available, the tree is on a
// file system whose changes inotify may miss, or it has more than
// maxWatchedDirs directories.
func newFSWatcher(top string, skip func(string) bool) *fsWatcher {
	var st unix.Statfs_t
	if unix.Statfs(top, &st) != nil || remoteFS(int64(st.Type)) {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &fsWatcher{fd: fd, top: top, skip: skip, wds: map[int32]string{}, dirs: map[string]int32{},
		changed: map[string]bool{}, buf: make([]byte, 64<<10)}
	if !w.watchTree("") {
		w.close()
		return nil
	}
	return w
}

// remoteFS reports file systems whose changes may come from elsewhere,
// unseen by inotify: NFS, SMB/CIFS, FUSE (sshfs, virtiofs), 9p, Ceph, AFS.
func remoteFS(magic int64) bool {
	switch uint32(magic) {
	case unix.NFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC,
		unix.FUSE_SUPER_MAGIC, unix.V9FS_MAGIC, unix.CEPH_SUPER_MAGIC, unix.AFS_SUPER_MAGIC, unix.AFS_FS_MAGIC, unix.CODA_SUPER_MAGIC:
		return true
	}
	return false
}

// watchTree watches dir and every directory below it. A directory is
// watched before it is read, so one created meanwhile is either read or
// heard of. It returns false when the tree is too big to watch.
func (w *fsWatcher) watchTree(dir string) bool {
	if len(w.dirs) >= maxWatchedDirs {
		return false
	}
	full := filepath.Join(w.top, filepath.FromSlash(dir))
	wd, err := unix.InotifyAddWatch(w.fd, full, watchMask)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return true // gone already (its removal is heard of)
	case errors.Is(err, unix.ENOSPC):
		return false // no watches left for this user
	case err != nil:
		w.lost = true // unreadable: git cannot see into it either
		return true
	}
	if old, ok := w.wds[int32(wd)]; ok && old != dir {
		delete(w.dirs, old) // the same directory, renamed
	}
	w.wds[int32(wd)], w.dirs[dir] = dir, int32(wd)
	f, err := os.Open(full)
	if err != nil {
		return true
	}
	es, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		w.lost = true
	}
	for _, e := range es {
		if !e.IsDir() {
			continue
		}
		sub := path.Join(dir, e.Name())
		if e.Name() == ".git" || w.skip(sub) {
			continue
		}
		if !w.watchTree(sub) {
			return false
		}
	}
	return true
}

// unwatchTree stops watching dir and the directories below it (it was
// moved away or removed; what replaces it is watched anew).
func (w *fsWatcher) unwatchTree(dir string) {
	for d, wd := range w.dirs {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, d)
			delete(w.wds, wd)
		}
	}
}

// take returns the paths changed since the last take, relative to top,
// or full when the whole tree must be scanned (changes were lost, a
// .gitignore at the top changed, or too many paths changed). It returns
// nil, false when the watcher is no longer usable.
func (w *fsWatcher) take() (paths []string, full, ok bool) {
	if !w.drain() {
		return nil, true, false
	}
	full = w.lost || len(w.changed) > maxChangedPaths
	if !full {
		paths = make([]string, 0, len(w.changed))
		for p := range w.changed {
			paths = append(paths, p)
		}
	}
	w.lost = false
	clear(w.changed)
	return paths, full, true
}

// drain reads every queued event. It returns false when the watcher
// cannot go on (the top directory went away, or reading failed).
func (w *fsWatcher) drain() bool {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return true
		}
		if err != nil || n <= 0 {
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name = strings.TrimRight(string(raw), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if !w.event(ev.Wd, ev.Mask, name) {
				return false
			}
		}
	}
}

// event records one event; it returns false when the top directory itself
// was removed or moved.
func (w *fsWatcher) event(wd int32, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were dropped: directories made meanwhile may be
		// unwatched, so watch the tree again (watches already there are
		// kept) and scan it whole.
		w.lost = true
		return w.watchTree("")
	}
	dir, ok := w.wds[wd]
	if !ok {
		return true // a directory no longer watched
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.wds, wd)
		if w.dirs[dir] == wd {
			delete(w.dirs, dir)
		}
		return dir != ""
	}
	if name == "" {
		// The directory itself: its removal or move is heard of in its
		// parent, except for the top.
		return dir != "" || mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) == 0
	}
	p := path.Join(dir, name)
	if w.skip(p) {
		return true
	}
	if name == ".git" {
		// Not watched; a repository appearing or going makes git see
		// dir differently (a nested repository is not snapshotted).
		if dir != "" {
			w.changed[dir] = true
		}
		return true
	}
	w.changed[p] = true
	if name == ".gitignore" {
		// What is ignored below dir may have changed.
		if dir == "" {
			w.lost = true
		} else {
			w.changed[dir] = true
		}
	}
	if mask&unix.IN_ISDIR != 0 {
		switch {
		case mask&(unix.IN_MOVED_FROM|unix.IN_DELETE) != 0:
			w.unwatchTree(p)
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			return w.watchTree(p)
		}
	}
	return true
}

// close stops watching. The kernel takes some milliseconds to let go of
// the watches (it waits for readers of its marks), which the caller, at
// the end of a run, need not wait for.
func (w *fsWatcher) close() {
	if w != nil && w.fd >= 0 {
		go unix.Close(w.fd)
		w.fd = -1
	}
}
