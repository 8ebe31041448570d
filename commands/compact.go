package commands

import (
	"context"

	"github.com/urfave/cli/v2"

	"decode/agent"
)

// CompactOptions are the inputs of `decode compact`.
type CompactOptions struct {
	Agent   *AgentOptions
	Session string
	Focus   string
}

// NewCmdCompact builds `decode compact`. runF replaces the run function in tests.
func NewCmdCompact(f *Factory, runF func(*cli.Context, *CompactOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *CompactOptions) error { return compactRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "compact",
		Usage:     "compact a session's context now: summarise its older part, keep the recent turns",
		ArgsUsage: "[SESSION]",
		Description: `Folds the older part of SESSION (default: the latest) into a compaction entry:
the model's summary of it, a state record decode keeps itself (the task and
every user and steering message, the mode and rules, the plan and its step,
the todo list, files read and modified, failed tool calls), and the id of the
first entry kept verbatim. The next resume sends that instead of the folded
entries. Nothing is deleted: decode log --jsonl still prints every entry, and
decode fork SESSION@N before the compaction rebuilds the context it had then.

A run compacts by itself when a request would pass about 85% of the model's
window (set a local model's window with [models."NAME"] context_window in
config), and when the provider answers that the context is too long.

   decode compact @ --focus "the failing test in parser_test.go"
   decode log @            # shows the compaction: tokens before → after`,
		Flags: append(agentFlags(true),
			&cli.StringFlag{Name: "focus", Usage: "what the summary must keep in detail"}),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("compact takes at most one SESSION, such as @ or 3f2a; quote the --focus text")
			}
			o := agentOptions(f, "run", c)
			o.Prompt = ""
			return runF(c, &CompactOptions{Agent: o, Session: c.Args().First(), Focus: c.String("focus")})
		},
	}
}

func compactRun(ctx context.Context, co *CompactOptions) error {
	o := co.Agent
	if o.NoSession {
		return usageErrorf("--no-session: compact works on a recorded session")
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
	ref := co.Session
	if ref == "" {
		ref = "@"
	}
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	s, err := st.OpenTail(ctx, id)
	if err != nil {
		return err
	}
	warnProblems(o.F.IO.Err, s)
	if err := o.continueSpec(s.Entries(), dir); err != nil {
		return err
	}
	o.Session, o.Opened = id, s
	return runAgentWith(ctx, o, &driver{noPrompt: true,
		turns: agent.DriverFunc(func(ctx context.Context, opts agent.Options, _ string) (agent.Outcome, error) {
			c, err := agent.Compact(ctx, opts, co.Focus)
			return agent.Outcome{Usage: c.Usage, Cost: c.Cost}, err
		})})
}
