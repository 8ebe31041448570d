package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TypeSnapshot records the work tree at a point of the session (SnapshotData).
const TypeSnapshot = "snapshot"

// codeRefPrefix names the ref that keeps a session's snapshots reachable: a
// chain of commits, one per distinct snapshot, whose trees are the work tree.
// It is apart from refs/decode/sessions/ so that sessions can be shared
// without their code.
const codeRefPrefix = "refs/decode/code/"

// Kinds of snapshot.
const (
	SnapBefore = "before" // before the first call of a step that may change files
	SnapAfter  = "after"  // after such a call
	SnapSafety = "safety" // the state a rewind replaced, so it can be undone
	SnapRewind = "rewind" // the state a rewind produced
)

// Limits on what a snapshot takes from untracked files.
const (
	// MaxSnapshotFile is the largest untracked file a snapshot takes.
	MaxSnapshotFile = 10 << 20
	// MaxSnapshotDirFiles is the most files a new untracked directory may
	// hold for a snapshot to take it.
	MaxSnapshotDirFiles = 1000
)

// SnapshotData records a snapshot of the work tree: Tree is a git tree of
// the tracked files plus the untracked files that are not ignored, kept
// reachable by Commit on refs/decode/code/<session>.
type SnapshotData struct {
	Tree   string `json:"tree"`
	Commit string `json:"commit,omitempty"`
	Kind   string `json:"kind"`
	CallID string `json:"call_id,omitempty"`
	// To is, for a rewind, the entry whose snapshot was restored.
	To int `json:"to,omitempty"`
	// Skipped lists untracked paths the snapshot left out.
	Skipped []SkippedPath `json:"skipped,omitempty"`
	// Ms is how long the snapshot took.
	Ms int64 `json:"ms,omitempty"`
}

// SkippedPath is an untracked file or directory a snapshot left out.
type SkippedPath struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// CodeRef returns the ref that keeps session id's snapshots reachable.
func CodeRef(id string) string { return codeRefPrefix + id }

// Snapshotter takes snapshots of one work tree for one session, through the
// real git binary and a private index (GIT_INDEX_FILE) kept between
// snapshots under <git dir>/decode/, so the user's index, HEAD and branches
// are never touched and most of the work is a stat walk. Only the process
// that holds the session's lock may use it.
type Snapshotter struct {
	store *Store
	id    string
	dir   string
	now   func() time.Time
	// getenv is where git's own variables (HOME, XDG_CONFIG_HOME, …) come from.
	getenv func(string) string

	ready   bool
	top     string   // the work tree's top directory
	env     []string // environment for git: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE
	index   string   // the private index
	seed    string   // the user's index, copied to start the private one
	tip     plumbing.Hash
	tipTree plumbing.Hash
	// clean is set while the private index is known to hold exactly
	// tipTree (this process wrote both), so a snapshot that finds nothing
	// changed needs no git write-tree.
	clean bool

	// watch, when the platform and the tree allow it, hears of the paths
	// that change between snapshots; dirs then counts the paths of the
	// private index below each directory, as of tipTree (nil until a full
	// scan rebuilt it: the next snapshot scans the whole tree), and
	// skipped is what the last snapshot left out.
	watch    *fsWatcher
	dirs     map[string]int
	files    map[string]bool // the index's files and symlinks, with dirs
	skipped  []SkippedPath
	excludes string // excludesStamp as of the last snapshot
	// scans counts the git status runs over the whole tree and over
	// changed paths only, and the snapshots that needed none (only
	// files of the index changed).
	scans struct{ full, paths, files int }
}

// Snapshotter returns the session's snapshotter for the work tree holding
// dir (its repository's top, or dir itself outside git). Close it when the
// run ends.
func (s *Session) Snapshotter(dir string) *Snapshotter {
	return &Snapshotter{store: s.store, id: s.id, dir: dir, now: s.store.clock, getenv: os.Getenv}
}

// Close stops following the work tree; a later snapshot scans it whole.
func (sn *Snapshotter) Close() error {
	sn.watch.close()
	sn.watch, sn.dirs, sn.files = nil, nil, nil
	return nil
}

// Top returns the directory snapshots are taken of.
func (sn *Snapshotter) Top(ctx context.Context) (string, error) {
	if err := sn.init(ctx); err != nil {
		return "", err
	}
	return sn.top, nil
}

// init finds the work tree and its git dir, clears what a killed snapshot
// may have left, and reads the session's last snapshot commit.
func (sn *Snapshotter) init(ctx context.Context) error {
	if sn.ready {
		return nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("code snapshots need the git command, which is not on PATH")
	}
	gitDir, top, err := sn.locate(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(sn.store.gitDir, "decode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	sn.top = top
	sn.index = filepath.Join(dir, "index-"+sn.id)
	if gitDir != sn.store.gitDir || fileExists(filepath.Join(gitDir, "index")) {
		sn.seed = filepath.Join(gitDir, "index")
	}
	sn.env = gitEnv(sn.getenv, "GIT_DIR="+gitDir, "GIT_WORK_TREE="+top, "GIT_INDEX_FILE="+sn.index)
	// We hold the session's lock, so lock files of its private index and
	// code ref can only be left by a process that was killed.
	for _, p := range []string{sn.index + ".lock", sn.index + ".restore", sn.index + ".restore.lock", sn.store.refs.path(CodeRef(sn.id)) + ".lock"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	pruneIndexes(dir, sn.index, time.Now().Add(-indexMaxAge))
	// The watcher starts before the first (full) scan, so nothing that
	// changes after the scan read it goes unheard.
	if sn.watch = newFSWatcher(top, skipDirs(top, gitDir, sn.store.gitDir)); sn.watch != nil {
		runtime.AddCleanup(sn, func(w *fsWatcher) { w.close() }, sn.watch)
	}
	if sn.tip, err = sn.store.refs.read(CodeRef(sn.id)); err != nil {
		return err
	}
	if !sn.tip.IsZero() {
		c, err := sn.store.db.commit(sn.tip)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		sn.tipTree = c.TreeHash
	}
	sn.ready = true
	return nil
}

// locate returns the git dir of the work tree holding sn.dir and its top:
// git's own answer when it is the repository the sessions live in, else
// sn.dir itself with the store as its git dir.
func (sn *Snapshotter) locate(ctx context.Context) (gitDir, top string, err error) {
	out, err := sn.gitAt(ctx, sn.dir, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err == nil {
		f := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(f) == 3 && samePath(f[2], sn.store.gitDir) {
			return f[1], f[0], nil
		}
	}
	abs, err := filepath.Abs(sn.dir)
	if err != nil {
		return "", "", fmt.Errorf("snapshot: %w", err)
	}
	return sn.store.gitDir, abs, nil
}

// skipDirs returns which directories under top a watcher leaves out: the
// git dirs (a linked worktree's or decode's own store may sit inside it).
func skipDirs(top string, gitDirs ...string) func(string) bool {
	skip := map[string]bool{}
	for _, d := range gitDirs {
		if rel, err := filepath.Rel(top, d); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			skip[filepath.ToSlash(rel)] = true
		}
	}
	return func(rel string) bool { return skip[rel] }
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// gitEnv keeps only what git needs to find its own configuration (so no
// key in decode's environment reaches it) and adds set.
func gitEnv(getenv func(string) string, set ...string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE"} {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, set...)
}

// gitOpts are set on every snapshot git command: no fsmonitor hook of the
// repository runs.
var gitOpts = []string{"-c", "core.fsmonitor=false", "-c", "core.quotePath=false"}

// git runs git in the work tree with the private index. Without a
// watcher, every snapshot scans the whole tree and git's untracked cache
// spares it reading every directory. With one, scans of the whole tree
// are rare and go without: the cache trusts a directory whose stat data
// it recorded, and a file made in the second it was recorded in went
// unseen once later snapshots had rewritten the index in a later second
// (TestSnapshotWatcherMatchesFullScan caught it).
func (sn *Snapshotter) git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cache := "core.untrackedCache=true"
	if sn.watch != nil {
		cache = "core.untrackedCache=false"
	}
	return sn.gitAt(ctx, sn.top, stdin, append([]string{"-c", cache}, args...)...)
}

func (sn *Snapshotter) gitAt(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, gitOpts...), args...)...)
	cmd.Dir = dir
	cmd.Env = sn.env
	if sn.env == nil {
		getenv := sn.getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		cmd.Env = gitEnv(getenv)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return out, fmt.Errorf("git %s: %s", subcommand(args), msg)
	}
	return out, nil
}

// subcommand returns the git command args run, past git's own options.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-c":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[i]
		}
	}
	return strings.Join(args, " ")
}

// Snapshot writes a tree of the work tree and, when it differs from the
// session's last one, a commit keeping it on the session's code ref. It
// returns the snapshot's data (Kind and CallID are the caller's to fill).
func (sn *Snapshotter) Snapshot(ctx context.Context) (SnapshotData, error) {
	start := time.Now()
	if err := sn.init(ctx); err != nil {
		return SnapshotData{}, err
	}
	tree, skipped, err := sn.writeTree(ctx)
	if err != nil {
		// What the watcher heard of may not be in the index: scan whole.
		sn.clean, sn.dirs, sn.files = false, nil, nil
		// A private index git cannot use (its blobs pruned by git gc
		// after a crash, say) is only a cache: start it again.
		if rerr := os.Remove(sn.index); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return SnapshotData{}, err
		}
		if tree, skipped, err = sn.writeTree(ctx); err != nil {
			return SnapshotData{}, fmt.Errorf("snapshot %s: %w", sn.top, err)
		}
	}
	if tree != sn.tipTree {
		if err := sn.commit(tree); err != nil {
			return SnapshotData{}, err
		}
	}
	sn.clean = true
	return SnapshotData{Tree: tree.String(), Commit: sn.tip.String(), Skipped: skipped, Ms: time.Since(start).Milliseconds()}, nil
}

// commit adds a commit of tree to the session's code ref.
func (sn *Snapshotter) commit(tree plumbing.Hash) error {
	var parents []plumbing.Hash
	if !sn.tip.IsZero() {
		parents = []plumbing.Hash{sn.tip}
	}
	sig := object.Signature{Name: committerName, Email: committerEmail, When: sn.now().UTC()}
	h, err := sn.store.db.putCommit(&object.Commit{
		Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents,
		Message: "snapshot of " + sn.top + "\n\nDecode-Session: " + sn.id + "\n",
	})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := sn.store.refs.update(CodeRef(sn.id), sn.tip, h); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	sn.tip, sn.tipTree = h, tree
	return nil
}

// writeTree brings the private index up to date with the work tree and
// writes its tree. git status (with the untracked cache) finds what changed
// since the last snapshot; only those paths are hashed. With a watcher,
// git status is asked only about the paths that changed, and not at all
// when none did.
func (sn *Snapshotter) writeTree(ctx context.Context) (plumbing.Hash, []SkippedPath, error) {
	changed, specs, full := sn.changes()
	if !full && len(specs) == 0 && sn.clean {
		return sn.tipTree, sn.skipped, nil
	}
	if !full && sn.clean {
		if h, ok, err := sn.updateFiles(ctx, changed); ok || err != nil {
			return h, sn.skipped, err
		}
	}
	if full {
		sn.dirs, sn.files = nil, nil // rebuilt below once the scan succeeded
	}
	if !fileExists(sn.index) {
		sn.clean = false // a new index: its tree is not known yet
	}
	if !fileExists(sn.index) && sn.seed != "" {
		if err := copyFile(sn.seed, sn.index); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return plumbing.ZeroHash, nil, fmt.Errorf("seed the snapshot index: %w", err)
		}
	}
	args := []string{"status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=normal", "--ignore-submodules=all"}
	if !full {
		// A few paths: no threads to stat them, and no rewrite of the
		// index for what git status refreshed (update-index and
		// write-tree rewrite it when something changed).
		args = append([]string{"-c", "core.preloadIndex=false", "--no-optional-locks"}, args...)
		args = append(args, "--")
		for _, p := range specs {
			args = append(args, ":(top,literal)"+p)
		}
	}
	if full {
		sn.scans.full++
	} else {
		sn.scans.paths++
	}
	out, err := sn.git(ctx, nil, args...)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	st := parseStatus(out)
	var skipped []SkippedPath
	if !full {
		// What the last snapshot left out is still left out, unless it
		// changed (then git status reported it again, if still there).
		for _, s := range sn.skipped {
			if !underAny(strings.TrimSuffix(s.Path, "/"), specs) {
				skipped = append(skipped, s)
			}
		}
	}
	// A path replaced by a directory is reported deleted, and what the
	// directory holds only once the index forgets the path: ask again.
	var added []string
	for round := 0; ; round++ {
		add, more, skip, err := sn.collect(ctx, st)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		added, skipped = append(added, more...), append(skipped, skip...)
		if len(add) > 0 {
			sn.clean = false
			if _, err := sn.git(ctx, add, "update-index", "--add", "--remove", "-z", "--stdin"); err != nil {
				return plumbing.ZeroHash, nil, err
			}
		}
		var again []string
		for _, p := range st.gone {
			if fi, err := os.Lstat(filepath.Join(sn.top, filepath.FromSlash(p))); err == nil && fi.IsDir() {
				again = append(again, ":(top,literal)"+p)
			}
		}
		if round > 0 || len(again) == 0 {
			break
		}
		gone := st.gone
		out, err := sn.git(ctx, nil, append([]string{"-c", "core.preloadIndex=false", "--no-optional-locks", "status", "--porcelain=v1", "-z", "--no-renames",
			"--untracked-files=normal", "--ignore-submodules=all", "--"}, again...)...)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		st = parseStatus(out)
		st.gone = append(gone, st.gone...)
	}
	slices.SortFunc(skipped, func(a, b SkippedPath) int { return strings.Compare(a.Path, b.Path) })
	h := sn.tipTree
	if !sn.clean {
		out, err = sn.git(ctx, nil, "write-tree")
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		h = plumbing.NewHash(strings.TrimSpace(string(out)))
		if h.IsZero() {
			return plumbing.ZeroHash, nil, fmt.Errorf("git write-tree printed %q", out)
		}
	}
	if err := sn.countIndex(ctx, full || st.conflicts, added, st.gone); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	sn.skipped = skipped
	return h, skipped, nil
}

// collect returns what git status reported for git update-index --stdin
// (the changed paths and the untracked files that may be snapshotted),
// which of those are untracked files, and what is left out.
func (sn *Snapshotter) collect(ctx context.Context, st statusOut) (add []byte, added []string, skipped []SkippedPath, err error) {
	for _, p := range st.paths {
		add = append(append(add, p...), 0)
	}
	for _, d := range st.untracked {
		if skip, ok := sn.vetUntracked(d); !ok {
			skipped = append(skipped, skip...)
			continue
		}
		if !strings.HasSuffix(d, "/") {
			add = append(append(add, d...), 0)
			added = append(added, d)
			continue
		}
		files, err := sn.git(ctx, nil, "ls-files", "-z", "--others", "--exclude-standard", "--", ":(top,literal)"+d)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range strings.Split(string(files), "\x00") {
			if f == "" {
				continue
			}
			if strings.HasSuffix(f, "/") {
				skipped = append(skipped, SkippedPath{Path: f, Reason: "a nested git repository"})
				continue
			}
			if skip, ok := sn.vetUntracked(f); !ok {
				skipped = append(skipped, skip...)
				continue
			}
			add = append(append(add, f...), 0)
			added = append(added, f)
		}
	}
	return add, added, skipped, nil
}

// changes returns what the watcher heard of since the last snapshot as
// pathspecs for git status, or full when the whole tree must be scanned:
// there is no watcher, no index yet, no count of its directories, or the
// change is too big (or was partly lost).
func (sn *Snapshotter) changes() (changed, specs []string, full bool) {
	if sn.watch == nil {
		return nil, nil, true
	}
	changed, whole, ok := sn.watch.take()
	if !ok {
		sn.Close()
		return nil, nil, true
	}
	// The exclude files outside the work tree are not watched: a change
	// to one may change what is ignored anywhere.
	excludes := sn.excludesStamp()
	if excludes != sn.excludes {
		sn.excludes, whole = excludes, true
	}
	if whole || sn.dirs == nil || !fileExists(sn.index) {
		return nil, nil, true
	}
	// A changed path in a directory the index has nothing under is
	// asked about as its highest such directory, so that git status
	// shows a new directory whole, as a full scan does.
	set := map[string]bool{}
	for _, p := range changed {
		top := p
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if sn.dirs[d] > 0 {
				break
			}
			top = d
		}
		set[top] = true
	}
	n := 0
	for _, p := range slices.Sorted(maps.Keys(set)) {
		if !underAny(p, specs) { // a parent sorts first
			specs = append(specs, p)
			n += len(p) + 16
		}
	}
	if n > 64<<10 {
		return nil, nil, true // too long a command line
	}
	return changed, specs, false
}

// updateFiles brings the index up to date without git status when every
// changed path is a file (or symlink) of the index that is still one, or
// is gone, or is a path the index and the last snapshot never had and
// that is gone again (a temporary file: sed -i, an editor's swap file): git
// update-index hashes or removes the index's files (ignore rules do not
// apply to them). ok is false when git status is needed.
func (sn *Snapshotter) updateFiles(ctx context.Context, changed []string) (tree plumbing.Hash, ok bool, err error) {
	var add []byte
	var gone []string
	for _, p := range changed {
		fi, err := os.Lstat(filepath.Join(sn.top, filepath.FromSlash(p)))
		missing := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
		switch {
		case !sn.files[p] && missing && sn.dirs[p] == 0 && !sn.wasSkipped(p):
			continue // came and went
		case !sn.files[p]:
			return plumbing.ZeroHash, false, nil
		case err == nil && fi.IsDir():
			return plumbing.ZeroHash, false, nil // what it holds needs git status
		case missing:
			gone = append(gone, p)
		case err != nil:
			return plumbing.ZeroHash, false, nil
		}
		add = append(append(add, p...), 0)
	}
	if len(add) == 0 {
		return sn.tipTree, true, nil
	}
	sn.scans.files++
	sn.clean = false
	if _, err := sn.git(ctx, add, "update-index", "--add", "--remove", "-z", "--stdin"); err != nil {
		return plumbing.ZeroHash, true, err
	}
	out, err := sn.git(ctx, nil, "write-tree")
	if err != nil {
		return plumbing.ZeroHash, true, err
	}
	tree = plumbing.NewHash(strings.TrimSpace(string(out)))
	if tree.IsZero() {
		return plumbing.ZeroHash, true, fmt.Errorf("git write-tree printed %q", out)
	}
	return tree, true, sn.countIndex(ctx, false, nil, gone)
}

// excludesStamp sums up the size and time of the exclude files git reads
// besides the .gitignore files: info/exclude and the default global one.
func (sn *Snapshotter) excludesStamp() string {
	if sn.getenv == nil {
		sn.getenv = os.Getenv
	}
	global := filepath.Join(sn.getenv("XDG_CONFIG_HOME"), "git", "ignore")
	if sn.getenv("XDG_CONFIG_HOME") == "" {
		global = filepath.Join(sn.getenv("HOME"), ".config", "git", "ignore")
	}
	var b strings.Builder
	for _, p := range []string{filepath.Join(sn.store.gitDir, "info", "exclude"), global} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%d %d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// underAny reports whether path p is one of dirs or below one of them.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// wasSkipped reports whether the last snapshot left p, or a directory
// holding it, out.
func (sn *Snapshotter) wasSkipped(p string) bool {
	for _, s := range sn.skipped {
		if sp := strings.TrimSuffix(s.Path, "/"); p == sp || strings.HasPrefix(p, sp+"/") {
			return true
		}
	}
	return false
}

// countIndex keeps sn.dirs (the number of index paths below each
// directory) and sn.files in step with the index: read from it after a
// full scan (or a conflict), else changed by the files added and gone.
// Without a watcher they are not needed.
func (sn *Snapshotter) countIndex(ctx context.Context, rebuild bool, added, gone []string) error {
	if sn.watch == nil {
		sn.dirs, sn.files = nil, nil
		return nil
	}
	if !rebuild && sn.dirs != nil {
		for _, p := range added {
			sn.files[p] = true
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				sn.dirs[d]++
			}
		}
		for _, p := range gone {
			delete(sn.files, p)
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if sn.dirs[d]--; sn.dirs[d] <= 0 {
					delete(sn.dirs, d)
				}
			}
		}
		return nil
	}
	// The index holds tree now; git ls-files also tells which entries
	// are skip-worktree (sparse checkout): git update-index --remove
	// would drop those, so they go through git status, as submodules do.
	dirs, files := map[string]int{}, map[string]bool{}
	out, err := sn.git(ctx, nil, "ls-files", "-z", "--stage", "-t")
	if err != nil {
		return err
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		if strings.HasPrefix(meta, "H ") && !strings.HasPrefix(meta, "H 160000 ") {
			files[p] = true
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d]++
		}
	}
	sn.dirs, sn.files = dirs, files
	return nil
}

// statusOut is what git status --porcelain -z reports.
type statusOut struct {
	// paths differ between the work tree and the index (modified,
	// deleted, unmerged); gone are those deleted from the work tree.
	paths, gone []string
	// untracked are the untracked paths (a directory, wholly untracked,
	// ends in "/").
	untracked []string
	// conflicts is set when unmerged paths were seen.
	conflicts bool
}

// parseStatus reads git status --porcelain=v1 -z.
func parseStatus(out []byte) statusOut {
	var st statusOut
	for _, rec := range strings.Split(string(out), "\x00") {
		if len(rec) < 4 {
			continue
		}
		xy, p := rec[:2], rec[3:]
		unmerged := xy[0] == 'U' || xy[1] == 'U' || xy == "AA" || xy == "DD"
		st.conflicts = st.conflicts || unmerged
		switch {
		case xy == "??":
			st.untracked = append(st.untracked, p)
		case xy[1] != ' ' || unmerged:
			st.paths = append(st.paths, p)
			if xy[1] == 'D' {
				st.gone = append(st.gone, p)
			}
		}
	}
	return st
}

// vetUntracked reports whether an untracked file, or a wholly untracked
// directory (ending in "/"), is small enough to snapshot, and what it
// leaves out when not.
func (sn *Snapshotter) vetUntracked(p string) ([]SkippedPath, bool) {
	full := filepath.Join(sn.top, filepath.FromSlash(strings.TrimSuffix(p, "/")))
	if !strings.HasSuffix(p, "/") {
		fi, err := os.Lstat(full)
		if err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSnapshotFile {
			return []SkippedPath{{Path: p, Reason: fmt.Sprintf("larger than %d MiB (%d bytes)", MaxSnapshotFile>>20, fi.Size())}}, false
		}
		// Snapshots are refs that are pushed with sessions: a new file that
		// holds a secret (an .env, a key file) stays out of them.
		if err == nil && fi.Mode().IsRegular() && sn.store.holdsSecret(full) {
			return []SkippedPath{{Path: p, Reason: "holds a secret (a known value or a secret's shape)"}}, false
		}
		return nil, true
	}
	n := 0
	errTooMany := errors.New("too many")
	err := filepath.WalkDir(full, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			n++
		}
		if n > MaxSnapshotDirFiles {
			return errTooMany
		}
		return nil
	})
	if err == errTooMany {
		return []SkippedPath{{Path: p, Reason: fmt.Sprintf("a new directory of more than %d files", MaxSnapshotDirFiles)}}, false
	}
	return nil, true
}

// copyFile copies src to dst through a temporary file renamed into place,
// so a crash never leaves a half-written dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// indexMaxAge is how long a private index unused by any snapshot is kept:
// each is about the size of the work tree's own index, one per session.
const indexMaxAge = 7 * 24 * time.Hour

// pruneIndexes removes the private indexes (and leftovers of copying one)
// in dir last written before cutoff, other than keep. A session resumed
// later seeds a new one; only its first snapshot is slower.
func pruneIndexes(dir, keep string, cutoff time.Time) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		p := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(e.Name(), "index-") || p == keep || e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.Remove(p)
		}
	}
}
