package commands

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
	q := steerQueue{dir: queueDir(st.GitDir(), s.ID())}
	if err := q.put(msg, o.FollowUp, time.Now()); err != nil {
		return err
	}
	when := "at its next step"
	if o.FollowUp {
		when = "when its turn would end"
	}
	if _, err := os.Stat(filepath.Join(st.GitDir(), "decode", "locks", s.ID()+".lock")); err != nil {
		fmt.Fprintf(o.F.IO.Err, "queued for session %s, which is not running: decode resume %s takes it\n", s.ID(), s.ID())
		return nil
	}
	fmt.Fprintf(o.F.IO.Err, "queued for session %s; it takes the message %s\n", s.ID(), when)
	return nil
}

// queueDir is where messages for a session wait: beside the store, not in
// it, so queuing never contends with the session's writer for its ref.
func queueDir(gitDir, id string) string {
	return filepath.Join(gitDir, "decode", "queue", id)
}

// Queued message files: <unix nanoseconds>-<random>.msg for steering,
// .follow for follow-ups. Names sort in the order they were queued.
const (
	steerExt  = ".msg"
	followExt = ".follow"
)

// steerQueue is one session's message queue, a directory of files each
// written whole (temporary file, then rename) and removed once taken.
type steerQueue struct {
	dir string
	// warn reports a message that could not be read or removed.
	warn func(string)
}

// put queues a message.
func (q steerQueue) put(msg string, followUp bool, now time.Time) error {
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	ext := steerExt
	if followUp {
		ext = followExt
	}
	name := fmt.Sprintf("%020d-%s%s", now.UnixNano(), hex.EncodeToString(rnd[:]), ext)
	tmp, err := os.CreateTemp(q.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	_, err = io.WriteString(tmp, msg)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(q.dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("queue message: %w", err)
	}
	return nil
}

// take removes and returns the queued messages of one kind, oldest first.
func (q steerQueue) take(followUp bool) []string {
	ext := steerExt
	if followUp {
		ext = followExt
	}
	ents, err := os.ReadDir(q.dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			q.report("read message queue: " + err.Error())
		}
		return nil
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext) && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		p := filepath.Join(q.dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			q.report("read queued message: " + err.Error())
			continue
		}
		// Remove before use: a message taken twice would be worse than a
		// message lost to a crash right here.
		if err := os.Remove(p); err != nil {
			q.report("remove queued message: " + err.Error())
			continue
		}
		out = append(out, string(data))
	}
	return out
}

func (q steerQueue) report(msg string) {
	if q.warn != nil {
		q.warn(msg)
	}
}
