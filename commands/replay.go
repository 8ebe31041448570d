package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/session"
)

// ReplayOptions are the inputs of `decode replay`: the run flags and the
// source session.
type ReplayOptions struct {
	Agent  *AgentOptions
	Source string
	// Code restores the code as it was at the source's start first.
	Code bool
}

// NewCmdReplay builds `decode replay`. runF replaces the run function in tests.
func NewCmdReplay(f *Factory, runF func(*cli.Context, *ReplayOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *ReplayOptions) error { return replayRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "replay",
		Usage:     "re-run a session's user turns on a model, as a new branch",
		ArgsUsage: "SESSION",
		Description: `Branches SESSION at its root (its start and first prompt, shared in git) and
runs its user prompts again, one turn after another, on the model -m names
(default: the session's own). Tools run for real, under the gate the session
was started with (its mode and rules; flags change them as for decode resume),
in a clean work tree. The new id is printed on stderr; compare the two with
decode log --diff. A turn that pauses or fails ends the replay there.
With --code, the work tree is first restored to the code as the session
found it (its first snapshot), recorded as an undoable rewind in the replay.

   decode replay 3f2a -m openai:gpt-4.1-mini
   decode log --diff 3f2a @`,
		Flags: append(agentFlags(true), lastMessageFlag(),
			&cli.BoolFlag{Name: "code", Usage: "first restore the work tree to the code as the session found it"}),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("replay takes one SESSION, such as @ or 3f2a")
			}
			o := agentOptions(f, "run", c)
			o.Prompt = ""
			return runF(c, &ReplayOptions{Agent: o, Source: c.Args().First(), Code: c.Bool("code")})
		},
	}
}

func replayRun(ctx context.Context, ro *ReplayOptions) error {
	o := ro.Agent
	if o.NoSession {
		return usageErrorf("--no-session: a replay is recorded as a new session")
	}
	if err := o.checkFlags(); err != nil {
		return err
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	st, err := o.F.storeAt(dir)
	if err != nil {
		return err
	}
	src, err := st.Open(ctx, ro.Source)
	if err != nil {
		return err
	}
	warnProblems(o.F.IO.Err, src)
	es := src.Entries()
	var turns []session.Entry
	for _, e := range es {
		if e.Type == session.TypeUser {
			turns = append(turns, e)
		}
	}
	if len(turns) == 0 {
		return fmt.Errorf("replay %s: the session has no user prompts to replay", src.ID())
	}
	// The replay runs with the spec the branch starts with; -m is recorded
	// by the fork entry, not as a change of spec.
	model := o.Model
	o.Model = ""
	if err := o.continueSpec(es, dir); err != nil {
		return err
	}
	if model != "" {
		o.Model, o.spec.Model = model, model
	}
	if o.Model == "" {
		return fmt.Errorf("replay %s: the session names no model; give one with -m", src.ID())
	}
	var start session.Snapshot
	if ro.Code {
		snaps := session.Snapshots(es)
		if len(snaps) == 0 {
			return fmt.Errorf("replay %s --code: the session has no code snapshots; replay it without --code", src.ID())
		}
		start = snaps[0]
	}
	// The branch shares the source's history up to its first prompt: the
	// root commit, as a run commits its start entry and prompt together.
	s, err := branch(ctx, st, src.ID(), turns[0].ID, session.ForkData{Replay: true, Model: o.Model})
	if err != nil {
		return err
	}
	if ro.Code {
		if err := replayCode(ctx, o, s, es, start); err != nil {
			return fmt.Errorf("replay %s --code: %w", src.ID(), err)
		}
	}
	if !o.Quiet {
		fmt.Fprintf(o.F.IO.Err, "replaying %s of %s on %s as session %s\n", plural(len(turns), "turn"), src.ID(), o.Model, s.ID())
	}
	o.Session = s.ID()
	d := &driver{noPrompt: true, turns: agent.Replay{Prompts: turns}}
	if !o.JSON {
		d.render = lineBreaks
	}
	return runAgentWith(ctx, o, d)
}

// lineBreaks starts each replayed turn's answer on a line of its own in
// text output.
func lineBreaks(sink func(agent.Event), p agent.Progress) (func(agent.Event), agent.Progress) {
	atLineStart := true
	wrapped := func(ev agent.Event) {
		if ev.Type == agent.EventText && ev.Text != "" {
			atLineStart = strings.HasSuffix(ev.Text, "\n")
		}
		sink(ev)
	}
	p.Turn = func() {
		if !atLineStart {
			wrapped(agent.Event{Type: agent.EventText, Text: "\n"})
		}
	}
	return wrapped, p
}
