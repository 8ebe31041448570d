package commands

import (
	"fmt"
	"strings"
	"time"

	"decode/session"

	"github.com/urfave/cli/v2"
)

// SteerOptions are the inputs of `decode steer`.
type SteerOptions struct {
	F        *Factory
	Dir      string
	Session  string
	Message  string
	FollowUp bool
}

// NewCmdSteer builds `decode steer`.
func NewCmdSteer(f *Factory, runF func(*cli.Context, *SteerOptions) error) *cli.Command {
	if runF == nil {
		runF = steerRun
	}
	return &cli.Command{
		Name:      "steer",
		Usage:     "queue a message for a running session",
		ArgsUsage: "SESSION [MESSAGE]",
		Description: `Queues MESSAGE (or piped stdin) for a session. A running decode takes it at
its next step boundary, never in the middle of a model response or a tool
call; with --follow-up, only when the model would end its turn. A session
that is not running takes it when it is resumed.

   decode steer @ "also update the changelog"
   decode steer --follow-up @ "then run the whole test suite"`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow-up", Usage: "take the message when the turn would end, not at the next step"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usageErrorf("steer needs a SESSION and a MESSAGE")
			}
			return runF(c, &SteerOptions{
				F: f, Dir: c.String("dir"), Session: c.Args().First(),
				Message: strings.Join(c.Args().Tail(), " "), FollowUp: c.Bool("follow-up"),
			})
		},
	}
}

func steerRun(c *cli.Context, o *SteerOptions) error {
	msg, err := readPrompt(o.F.IO, o.Message, defaultMaxStdin)
	if err != nil {
		return usageErrorf("steer: no message: give it as an argument or pipe it on stdin")
	}
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	s, err := st.Open(c.Context, o.Session)
	if err != nil {
		return err
	}
	if err := st.Queue(s.ID()).Put(msg, o.FollowUp, time.Now()); err != nil {
		return err
	}
	when := "at its next step"
	if o.FollowUp {
		when = "when its turn would end"
	}
	if st.Writer(s.ID()) != session.WriterAlive {
		fmt.Fprintf(o.F.IO.Err, "queued for session %s, which is not running: decode resume %s takes it\n", s.ID(), s.ID())
		return nil
	}
	fmt.Fprintf(o.F.IO.Err, "queued for session %s; it takes the message %s\n", s.ID(), when)
	return nil
}
