package commands

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"decode/session"
)

// RewindOptions are the inputs of `decode rewind`.
type RewindOptions struct {
	F   *Factory
	Dir string
	// Ref names the session; At the entry whose code to restore (0: the
	// session's last snapshot).
	Ref    string
	At     int
	DryRun bool
	Quiet  bool
}

// NewCmdRewind builds `decode rewind`. runF replaces the run function in tests.
func NewCmdRewind(f *Factory, runF func(*cli.Context, *RewindOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *RewindOptions) error { return rewindRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "rewind",
		Usage:     "restore the work tree to the code as it was at an entry of a session",
		ArgsUsage: "SESSION@ENTRY",
		Description: `Restores every file of the snapshot taken at or before ENTRY (decode log
SESSION shows the numbers), byte for byte and mode for mode. It first
records a snapshot of the current state as an entry, so a rewind can itself
be rewound (the command prints how). Files the snapshot does not know are
removed only if the session's last snapshot had them: files that appeared
since are left alone, and so are ignored files and the untracked files
snapshots skip (over 10 MiB, or new directories of over 1,000 files).
HEAD, the index and branches are never touched. The session must not be
running (exit 6).

   decode rewind @@14 --dry-run   # the diff the rewind would apply
   decode rewind @@14`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the diff the rewind would apply and change nothing"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("rewind takes one SESSION@ENTRY, such as @@14")
			}
			ref, at, err := session.SplitEntryRef(c.Args().First())
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			return runF(c, &RewindOptions{F: f, Dir: c.String("dir"), Ref: ref, At: at, DryRun: c.Bool("dry-run"), Quiet: c.Bool("quiet")})
		},
	}
}

func rewindRun(ctx context.Context, o *RewindOptions) error {
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	st, err := o.F.storeAt(dir)
	if err != nil {
		return err
	}
	s, err := st.Open(ctx, o.Ref)
	if err != nil {
		return err
	}
	if _, _, err := codeAt(ctx, st, fmt.Sprintf("%s@%d", s.ID(), o.At)); err != nil {
		return err
	}
	if err := s.Lock(); err != nil {
		return fmt.Errorf("session %s is being written by another decode process (%w); rewind it when that run ends", s.ID(), err)
	}
	defer s.Unlock()
	ro := session.RewindOptions{}
	if o.DryRun {
		ro.DryRun = o.F.IO.Out
	}
	r, err := s.Rewind(ctx, s.Snapshotter(dir), s.Entries(), o.At, ro)
	if err != nil {
		return fmt.Errorf("rewind %s: %w", s.ID(), err)
	}
	if !o.Quiet {
		reportRewind(o.F.IO.Err, s, r, o.DryRun)
	}
	return nil
}

// reportRewind tells what a rewind did, and how to undo it.
func reportRewind(w io.Writer, s *session.Session, r session.RewindResult, dry bool) {
	verb := "rewound"
	if dry {
		verb = "would rewind"
	}
	fmt.Fprintf(w, "%s the code to entry %d: %d files written, %d removed\n", verb, r.To.Entry, r.Written, r.Removed)
	for _, p := range r.Kept {
		fmt.Fprintf(w, "left alone (appeared after the session's last snapshot): %s\n", p)
	}
	if dry {
		return
	}
	es := s.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Type == session.TypeSnapshot && r.Safety.Tree != "" {
			var d session.SnapshotData
			if es[i].Decode(&d) == nil && d.Kind == session.SnapSafety {
				fmt.Fprintf(w, "undo with: decode rewind %s@%d\n", s.ID(), es[i].ID)
				return
			}
		}
	}
}
