package commands

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"decode/session"
)

// ForkOptions are the inputs of `decode fork`.
type ForkOptions struct {
	F   *Factory
	Dir string
	// Ref names the source session; At the entry to branch after (0: the last).
	Ref   string
	At    int
	Quiet bool
	// Code restores the work tree to the code at the fork point; Worktree,
	// when set, makes a new work tree there instead (see forkCode).
	Code     bool
	Worktree string
	known    []session.Entry // the source's entries, for Code
}

// NewCmdFork builds `decode fork`. runF replaces the run function in tests.
func NewCmdFork(f *Factory, runF func(*cli.Context, *ForkOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *ForkOptions) error { return forkRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "fork",
		Usage:     "branch a session after one of its entries; prints the new session's id",
		ArgsUsage: "SESSION[@ENTRY]",
		Description: `Creates a session that shares SESSION's history up to entry ENTRY (default:
its last; decode log SESSION shows the numbers) and records a fork entry
naming its source. Nothing is copied: the new ref points into the source's
commits. The new id goes to stdout; decode resume continues the fork, as the
newest session.

   decode fork 3f2a@12 && decode resume "try it without mocks"
   id=$(decode fork @) && decode resume "$id" "another way"

With --code, the work tree is also restored to the code as it was at the
fork point (as decode rewind does, undoable). With --worktree DIR, a new git
worktree is made at DIR (detached at HEAD) holding that code instead, so two
branches of the work can run side by side; outside a git repository DIR is
a plain directory:

   decode fork @@14 --worktree ../try2 && decode resume -C ../try2 "try it without generics"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the new id"},
			&cli.BoolFlag{Name: "code", Usage: "also restore the work tree to the code at the fork point"},
			&cli.StringFlag{Name: "worktree", Usage: "make a new work tree at `DIR` holding the code at the fork point"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("fork takes one SESSION[@ENTRY], such as @ or 3f2a@12")
			}
			ref, at, err := session.SplitEntryRef(c.Args().First())
			if err != nil {
				return &UsageError{Msg: err.Error()}
			}
			if c.Bool("code") && c.String("worktree") != "" {
				return usageErrorf("fork takes one of --code and --worktree")
			}
			return runF(c, &ForkOptions{F: f, Dir: c.String("dir"), Ref: ref, At: at, Quiet: c.Bool("quiet"),
				Code: c.Bool("code"), Worktree: c.String("worktree")})
		},
	}
}

func forkRun(ctx context.Context, o *ForkOptions) error {
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	src, err := st.Resolve(ctx, o.Ref)
	if err != nil {
		return err
	}
	code, err := o.checkCode(ctx, st, src)
	if err != nil {
		return err
	}
	s, err := branch(ctx, st, src, o.At, session.ForkData{})
	if err != nil {
		return err
	}
	es := s.Entries()
	point := es[len(es)-1].Parent // the fork entry follows the fork point
	if code {
		if err := forkCode(ctx, o, s); err != nil {
			return fmt.Errorf("forked %s as %s, but its code: %w", src, s.ID(), err)
		}
	}
	fmt.Fprintln(o.F.IO.Out, s.ID())
	if !o.Quiet {
		fmt.Fprintf(o.F.IO.Err, "forked %s after entry %d; continue with: decode resume %s \"PROMPT\"\n", src, point, s.ID())
	}
	return nil
}

// branch forks src after entry at (0: its last) with the fork entry d.
func branch(ctx context.Context, st *session.Store, src string, at int, d session.ForkData) (*session.Session, error) {
	return st.Fork(ctx, src, at, d)
}
