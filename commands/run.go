package commands

import (
	"github.com/urfave/cli/v2"
)

// NewCmdRun builds `decode run`. runF replaces the run function in tests.
func NewCmdRun(f *Factory, runF func(*cli.Context, *AgentOptions) error) *cli.Command {
	if runF == nil {
		runF = runRun
	}
	return &cli.Command{
		Name:      "run",
		Usage:     "carry out a task with all tools under the permission gate",
		ArgsUsage: "[TASK]",
		Description: `Carries out a task: reads, edits, runs commands. Every tool call goes through
the permission gate (--mode, --allow, --deny). In the default mode read-only
tools run and anything else asks: at a terminal decode prompts on /dev/tty,
showing the diff of an edit, with [y]es/[a]lways/[N]o/no, because… (a adds
an exact allow rule for the rest of the session, kept on resume; "n REASON",
or n and then a line, sends the reason to the model);
with no terminal the run pauses (exit 3) until decode approve or decode deny,
and decode resume continues it (--on-ask deny: the call is denied instead and
the model is told why).

   decode run "rename Foo to Bar in pkg/x and run go test" --mode edit --allow 'bash(go test *)'
   decode run -m script:testdata/scripts/demo.json "offline, deterministic"
   decode run -f spec.md -f shot.png "make the page match the spec and the screenshot"
   decode run --plan @          # carry out the plan of the latest decode plan session
   decode run --remember "fix the flaky test"   # then add what was learned to ./MEMORY.md`,
		Flags: append(agentFlags(true), lastMessageFlag(), attachFlag(),
			&cli.StringFlag{Name: "plan", Usage: "carry out the plan recorded in `SESSION` by decode plan, step by step"},
			&cli.StringFlag{Name: "plan-file", Usage: "carry out the numbered plan in `FILE`, step by step"},
			&cli.BoolFlag{Name: "remember", Usage: "at the end, append one dated sentence of what was learned to ./MEMORY.md"},
		),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "run", c)
			o.Plan, o.PlanFile, o.Remember = c.String("plan"), c.String("plan-file"), c.Bool("remember")
			return runF(c, o)
		},
	}
}
