package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ErrNoSnapshots reports a session that recorded no code snapshot.
var ErrNoSnapshots = errors.New("no code snapshots")

// Snapshot is a snapshot entry of a session.
type Snapshot struct {
	Entry int // the entry's id
	SnapshotData
}

// Snapshots returns the snapshot entries among es, in order.
func Snapshots(es []Entry) []Snapshot {
	var out []Snapshot
	for _, e := range es {
		if e.Type != TypeSnapshot {
			continue
		}
		var d SnapshotData
		if e.Decode(&d) == nil && !plumbing.NewHash(d.Tree).IsZero() {
			out = append(out, Snapshot{Entry: e.ID, SnapshotData: d})
		}
	}
	return out
}

// SnapshotAt returns the code as it was at entry at (at <= 0: the last
// entry): the last snapshot recorded at or before it, or, when the session
// changed nothing before it, its first snapshot.
func SnapshotAt(es []Entry, at int) (Snapshot, error) {
	snaps := Snapshots(es)
	if len(snaps) == 0 {
		return Snapshot{}, ErrNoSnapshots
	}
	if at <= 0 {
		return snaps[len(snaps)-1], nil
	}
	found := snaps[0]
	for _, s := range snaps {
		if s.Entry > at {
			break
		}
		found = s
	}
	return found, nil
}

// workTrees returns the trees of the snapshots es took around calls
// (kinds before and after), in order: the files a rewind may remove are
// those the session's own steps saw. Snapshots taken by rewinds are left
// out, as they take in whatever else the work tree held at the time.
func workTrees(es []Entry) []string {
	var out []string
	for _, s := range Snapshots(es) {
		if (s.Kind == SnapBefore || s.Kind == SnapAfter) && (len(out) == 0 || out[len(out)-1] != s.Tree) {
			out = append(out, s.Tree)
		}
	}
	return out
}

// DiffFormat selects what Diff prints.
type DiffFormat int

// Diff formats.
const (
	DiffPatch    DiffFormat = iota // a unified diff
	DiffStat                       // git's --stat
	DiffNameOnly                   // the changed paths
)

// Diff writes to w how the snapshot tree to differs from from, as git
// diff-tree prints it. paths, when given, limit it to those paths.
func (st *Store) Diff(ctx context.Context, w io.Writer, from, to string, f DiffFormat, paths ...string) error {
	args := []string{"diff-tree", "-r", "--no-color", "--find-renames"}
	switch f {
	case DiffStat:
		args = append(args, "--stat")
	case DiffNameOnly:
		args = append(args, "--name-only")
	default:
		args = append(args, "-p")
	}
	args = append(args, from, to)
	if len(paths) > 0 {
		args = append(args, "--")
		for _, p := range paths {
			args = append(args, ":(top,literal)"+p)
		}
	}
	sn := &Snapshotter{env: gitEnv(os.Getenv, "GIT_DIR="+st.gitDir)}
	out, err := sn.gitAt(ctx, st.gitDir, nil, args...)
	if err != nil {
		return fmt.Errorf("diff %s %s: %w", short(plumbing.NewHash(from)), short(plumbing.NewHash(to)), err)
	}
	_, err = w.Write(out)
	return err
}

// change is one path a restore writes or removes.
type change struct {
	path   string
	remove bool
}

// RewindResult says what a rewind did (or, dry, would do).
type RewindResult struct {
	// To is the snapshot restored.
	To Snapshot
	// Safety is the snapshot of the state replaced.
	Safety SnapshotData
	// Written and Removed count the files changed; Kept lists files the
	// target does not know that were left alone because the session never
	// saw them (they appeared since its last snapshot).
	Written, Removed int
	Kept             []string
}

// RewindOptions change what Rewind does.
type RewindOptions struct {
	// DryRun, when set, receives the diff the rewind would apply, and
	// nothing is changed or recorded.
	DryRun io.Writer
	// Exact removes every file the target does not know, as in a work tree
	// made for the purpose (fork --worktree), and records no safety entry.
	Exact bool
	// Known, when set, replaces the session's entries as those whose
	// snapshots say which files may be removed (fork --code and replay
	// --code: the source session's).
	Known []Entry
}

// Rewind restores the work tree of sn to the code as it was at entry at of
// src's entries (src may be s itself or the session s was forked from). It
// first records a safety snapshot of the current state, so the rewind can
// be rewound, then makes every file the target snapshot knows match it
// byte for byte and mode for mode, and removes the files it does not know
// only if a snapshot the session took around a call had them (files that
// appeared otherwise, such as yours since, are left alone). Ignored and skipped files are never touched, as no
// snapshot holds them. A snapshot of the result is recorded last.
func (s *Session) Rewind(ctx context.Context, sn *Snapshotter, src []Entry, at int, o RewindOptions) (RewindResult, error) {
	var r RewindResult
	target, err := SnapshotAt(src, at)
	if err != nil {
		return r, err
	}
	r.To = target
	known := workTrees(s.entries)
	if o.Known != nil {
		known = workTrees(o.Known)
	}
	if r.Safety, err = sn.Snapshot(ctx); err != nil {
		return r, err
	}
	r.Safety.Kind = SnapSafety
	cur := plumbing.NewHash(r.Safety.Tree)
	if o.Exact {
		known = []string{cur.String()}
	}
	changes, kept, err := sn.plan(ctx, cur, plumbing.NewHash(target.Tree), known)
	if err != nil {
		return r, err
	}
	r.Kept = kept
	for _, c := range changes {
		if c.remove {
			r.Removed++
		} else {
			r.Written++
		}
	}
	if o.DryRun != nil {
		if len(changes) == 0 {
			return r, nil
		}
		paths := make([]string, len(changes))
		for i, c := range changes {
			paths[i] = c.path
		}
		return r, s.store.Diff(ctx, o.DryRun, cur.String(), target.Tree, DiffPatch, paths...)
	}
	if !o.Exact {
		if err := s.Append(ctx, NewEntry(TypeSnapshot, r.Safety, "snapshot before rewind")); err != nil {
			return r, err
		}
	}
	if err := sn.apply(ctx, target.Tree, changes); err != nil {
		return r, err
	}
	after, err := sn.Snapshot(ctx)
	if err != nil {
		return r, err
	}
	after.Kind, after.To = SnapRewind, target.Entry
	return r, s.Append(ctx, NewEntry(TypeSnapshot, after, fmt.Sprintf("rewind code to entry %d", target.Entry)))
}

// plan lists the changes that turn tree cur into want: paths to write from
// want, and paths want lacks to remove when one of the known trees has
// them; the others want lacks are kept.
func (sn *Snapshotter) plan(ctx context.Context, cur, want plumbing.Hash, known []string) (changes []change, kept []string, err error) {
	out, err := sn.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--raw", cur.String(), want.String())
	if err != nil {
		return nil, nil, err
	}
	var removed []string
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		meta, p := f[i], f[i+1]
		if !strings.HasPrefix(meta, ":") {
			i-- // not a record start; resynchronise
			continue
		}
		fs := strings.Fields(meta)
		if len(fs) < 5 {
			continue
		}
		if fs[4] == "D" {
			removed = append(removed, p)
			continue
		}
		if fs[1] == "160000" {
			continue // a submodule: its own repository's business
		}
		changes = append(changes, change{path: p})
	}
	if len(removed) == 0 {
		return changes, nil, nil
	}
	inKnown := func(string) bool { return true }
	if len(known) != 1 || known[0] != cur.String() {
		set, err := sn.paths(ctx, known)
		if err != nil {
			return nil, nil, err
		}
		inKnown = func(p string) bool { return set[p] }
	}
	for _, p := range removed {
		if inKnown(p) {
			changes = append(changes, change{path: p, remove: true})
		} else {
			kept = append(kept, p)
		}
	}
	return changes, kept, nil
}

// paths returns every path any of trees holds: those of the first, and
// those each later one added (one git diff-tree --stdin run).
func (sn *Snapshotter) paths(ctx context.Context, trees []string) (map[string]bool, error) {
	set := map[string]bool{}
	if len(trees) == 0 {
		return set, nil
	}
	names, err := sn.git(ctx, nil, "ls-tree", "-r", "-z", "--name-only", trees[0])
	if err != nil {
		return nil, err
	}
	if len(trees) > 1 {
		var in strings.Builder
		for i := 1; i < len(trees); i++ {
			in.WriteString(trees[i-1] + " " + trees[i] + "\n")
		}
		added, err := sn.git(ctx, []byte(in.String()), "diff-tree", "--stdin", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=A")
		if err != nil {
			return nil, err
		}
		names = append(append(names, 0), added...)
	}
	for _, rec := range strings.Split(string(names), "\x00") {
		// diff-tree --stdin echoes each pair before its paths.
		if i := strings.LastIndexByte(rec, '\n'); i >= 0 {
			rec = rec[i+1:]
		}
		if rec != "" {
			set[rec] = true
		}
	}
	return set, nil
}

// apply removes and writes the planned paths: removals first (and the
// directories they leave empty), then the files of tree want, written by
// git checkout-index from a throw-away index so modes and symlinks come
// out as git stores them.
func (sn *Snapshotter) apply(ctx context.Context, want string, changes []change) error {
	var write []byte
	for _, c := range changes {
		if !c.remove {
			write = append(append(write, c.path...), 0)
			continue
		}
		full := filepath.Join(sn.top, filepath.FromSlash(c.path))
		if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rewind: %w", err)
		}
		for d := filepath.Dir(full); d != sn.top && strings.HasPrefix(d, sn.top); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty
			}
		}
	}
	if len(write) == 0 {
		return nil
	}
	tmp := sn.index + ".restore"
	defer os.Remove(tmp)
	saved := sn.env
	sn.env = append(append([]string{}, saved...), "GIT_INDEX_FILE="+tmp)
	defer func() { sn.env = saved }()
	if _, err := sn.git(ctx, nil, "read-tree", want); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	if _, err := sn.git(ctx, write, "checkout-index", "-f", "-z", "--stdin"); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	return nil
}

// FileChange is a file changed between two snapshots; Binary files have no
// line counts.
type FileChange struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
}

// Changes returns, for each pair of trees (from, to), the files that
// differ, from one git diff-tree --stdin run.
func (st *Store) Changes(ctx context.Context, pairs [][2]string) ([][]FileChange, error) {
	out := make([][]FileChange, len(pairs))
	if len(pairs) == 0 {
		return out, nil
	}
	var in strings.Builder
	for _, p := range pairs {
		in.WriteString(p[0] + " " + p[1] + "\n")
	}
	sn := &Snapshotter{env: gitEnv(os.Getenv, "GIT_DIR="+st.gitDir)}
	raw, err := sn.gitAt(ctx, st.gitDir, []byte(in.String()), "diff-tree", "--stdin", "-r", "--no-renames", "--numstat", "-z")
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	// Each pair's output starts with the pair echoed; a pair given twice
	// is echoed twice, in order.
	idx := map[string][]int{}
	for i, p := range pairs {
		k := p[0] + " " + p[1]
		idx[k] = append(idx[k], i)
	}
	cur := -1
	for _, rec := range strings.Split(string(raw), "\x00") {
		for _, line := range strings.Split(rec, "\n") {
			if q := idx[line]; len(q) > 0 {
				cur, idx[line] = q[0], q[1:]
				continue
			}
			f := strings.SplitN(line, "\t", 3)
			if cur < 0 || len(f) != 3 {
				continue
			}
			c := FileChange{Path: f[2], Binary: f[0] == "-"}
			fmt.Sscan(f[0], &c.Added)
			fmt.Sscan(f[1], &c.Deleted)
			out[cur] = append(out[cur], c)
		}
	}
	return out, nil
}
