package commands

import (
	"context"
	"fmt"
	"path/filepath"

	"decode/session"
)

// checkCode reports whether the fork moves code too, and refuses before
// anything is written when it cannot: the source recorded no snapshot, or
// the new work tree's directory is taken.
func (o *ForkOptions) checkCode(ctx context.Context, st *session.Store, src string) (bool, error) {
	if !o.Code && o.Worktree == "" {
		return false, nil
	}
	_, es, err := codeAt(ctx, st, fmt.Sprintf("%s@%d", src, o.At))
	if err != nil {
		return false, err
	}
	o.known = es
	if o.Worktree != "" {
		wt, err := o.worktreeDir()
		if err != nil {
			return false, err
		}
		if err := session.CheckNewDir(wt); err != nil {
			return false, &UsageError{Msg: "--worktree: " + err.Error()}
		}
	}
	return true, nil
}

func (o *ForkOptions) worktreeDir() (string, error) {
	wd, err := o.F.workDir(o.Dir)
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(o.Worktree) {
		return filepath.Clean(o.Worktree), nil
	}
	return filepath.Join(wd, o.Worktree), nil
}

// forkCode restores the code at the fork point: in place (--code, undoable
// like a rewind), or in a new work tree (--worktree).
func forkCode(ctx context.Context, o *ForkOptions, s *session.Session) error {
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	if err := s.Lock(); err != nil {
		return err
	}
	defer s.Unlock()
	ro := session.RewindOptions{Known: o.known}
	if o.Worktree != "" {
		wt, err := o.worktreeDir()
		if err != nil {
			return err
		}
		if err := s.Store().AddWorktree(ctx, dir, wt); err != nil {
			return err
		}
		dir, ro.Exact = wt, true
	}
	r, err := s.Rewind(ctx, s.Snapshotter(dir), s.Entries(), 0, ro)
	if err != nil {
		return err
	}
	if o.Quiet {
		return nil
	}
	if o.Worktree != "" {
		fmt.Fprintf(o.F.IO.Err, "made %s with the code at entry %d; continue there with: decode resume -C %s %s \"PROMPT\"\n", dir, r.To.Entry, o.Worktree, s.ID())
		return nil
	}
	reportRewind(o.F.IO.Err, s, r, false)
	return nil
}

// replayCode restores, before a replay, the code as the source session
// found it (its first snapshot, start), removing files it made.
func replayCode(ctx context.Context, o *AgentOptions, s *session.Session, src []session.Entry, start session.Snapshot) error {
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	if err := s.Lock(); err != nil {
		return err
	}
	defer s.Unlock()
	r, err := s.Rewind(ctx, s.Snapshotter(dir), src, start.Entry, session.RewindOptions{Known: src})
	if err != nil {
		return err
	}
	if !o.Quiet {
		reportRewind(o.F.IO.Err, s, r, false)
	}
	return nil
}
