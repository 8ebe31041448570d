package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CheckNewDir reports whether dir can become a new work tree: it must not
// exist, or be an empty directory.
func CheckNewDir(dir string) error {
	es, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(es) > 0:
		return fmt.Errorf("%s exists and is not empty; name a new directory", dir)
	}
	return nil
}

// AddWorktree makes dir a new work tree for the code of the sessions in
// st: a git worktree of the repository holding from, detached at its HEAD
// (git worktree add --detach); outside a git repository, a plain directory.
// Rewind with RewindOptions.Exact then fills it.
func (st *Store) AddWorktree(ctx context.Context, from, dir string) error {
	if err := CheckNewDir(dir); err != nil {
		return err
	}
	sn := &Snapshotter{store: st, dir: from}
	gitDir, _, err := sn.locate(ctx)
	if err != nil {
		return err
	}
	if gitDir == st.gitDir && !sn.inRepo(ctx) {
		return os.MkdirAll(dir, 0o755)
	}
	if _, err := sn.gitAt(ctx, from, nil, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return errors.New("the repository has no commit yet, and a git worktree needs one: commit first, or use --code to restore the code in place")
	}
	if _, err := sn.gitAt(ctx, from, nil, "worktree", "add", "-q", "--detach", dir); err != nil {
		return err
	}
	return nil
}

// inRepo reports whether sn.dir is inside the repository the store is.
func (sn *Snapshotter) inRepo(ctx context.Context) bool {
	out, err := sn.gitAt(ctx, sn.dir, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	return err == nil && samePath(string(trimNL(out)), sn.store.gitDir)
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
