package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"decode/session"
)

// DiffOptions are the inputs of `decode diff`.
type DiffOptions struct {
	F   *Factory
	Dir string
	// From and To name points of sessions, SESSION[@ENTRY]; From is empty
	// when only one point was given (the diff starts at that session's
	// first snapshot).
	From, To string
	Format   session.DiffFormat
}

// NewCmdDiff builds `decode diff`. runF replaces the run function in tests.
func NewCmdDiff(f *Factory, runF func(*cli.Context, *DiffOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *DiffOptions) error { return diffRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "diff",
		Usage:     "show what a session changed in the code, as a unified diff",
		ArgsUsage: "SESSION[@ENTRY] [SESSION@ENTRY]",
		Description: `With one point, shows how the code changed from the session's start (its
first snapshot) to that point (default: the session's last snapshot). With
two, shows the change from the first point to the second; they may belong to
different sessions (a session and its fork, say). A point's code is the last
snapshot recorded at or before its entry: decode snapshots the work tree
before and after every call that may change files (write, edit, multi_edit,
bash). Untracked files count; ignored ones do not.

   decode diff @                 # what the latest session changed
   decode diff @@14 @@30         # between two entries of it
   decode diff --stat 3f2a 8c1d  # two sessions' end states, summarised`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
			&cli.BoolFlag{Name: "stat", Usage: "print a diffstat instead of the diff"},
			&cli.BoolFlag{Name: "name-only", Usage: "print only the names of the changed files"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usageErrorf("diff takes one or two SESSION[@ENTRY], such as @ or @@14 @@30")
			}
			if c.Bool("stat") && c.Bool("name-only") {
				return usageErrorf("diff takes one of --stat and --name-only")
			}
			o := &DiffOptions{F: f, Dir: c.String("dir"), To: c.Args().Get(c.NArg() - 1)}
			if c.NArg() == 2 {
				o.From = c.Args().First()
			}
			switch {
			case c.Bool("stat"):
				o.Format = session.DiffStat
			case c.Bool("name-only"):
				o.Format = session.DiffNameOnly
			}
			return runF(c, o)
		},
	}
}

func diffRun(ctx context.Context, o *DiffOptions) error {
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	to, es, err := codeAt(ctx, st, o.To)
	if err != nil {
		return err
	}
	from := session.Snapshots(es)[0]
	if o.From != "" {
		if from, _, err = codeAt(ctx, st, o.From); err != nil {
			return err
		}
	}
	return st.Diff(ctx, o.F.IO.Out, from.Tree, to.Tree, o.Format)
}

// codeAt resolves SESSION[@ENTRY] to the snapshot of the code at that
// point, with the session's entries.
func codeAt(ctx context.Context, st *session.Store, point string) (session.Snapshot, []session.Entry, error) {
	ref, at, err := session.SplitEntryRef(point)
	if err != nil {
		return session.Snapshot{}, nil, &UsageError{Msg: err.Error()}
	}
	s, err := st.Open(ctx, ref)
	if err != nil {
		return session.Snapshot{}, nil, err
	}
	es := s.Entries()
	if at > 0 && (len(es) == 0 || es[len(es)-1].ID < at) {
		return session.Snapshot{}, nil, fmt.Errorf("session %s has no entry %d; decode log %s shows its entries", s.ID(), at, s.ID())
	}
	snap, err := session.SnapshotAt(es, at)
	if errors.Is(err, session.ErrNoSnapshots) {
		return snap, nil, fmt.Errorf("session %s has no code snapshots: it made no call that could change files (write, edit, multi_edit, bash), or ran before decode recorded code", s.ID())
	}
	return snap, es, err
}
