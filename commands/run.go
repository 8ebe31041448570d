package commands

import (
	"github.com/urfave/cli/v2"
)

// NewCmdRun builds `decode run`. runF replaces the run function in tests.
func NewCmdRun(f *Factory, runF func(*cli.Context, *AgentOptions) error) *cli.Command {
	if runF == nil {
		runF = agentRun
	}
	return &cli.Command{
		Name:      "run",
		Usage:     "carry out a task with all tools under the permission gate",
		ArgsUsage: "[TASK]",
		Description: `Carries out a task: reads, edits, runs commands. Every tool call goes through
the permission gate (--mode, --allow, --deny). In the default mode read-only
tools run and anything else asks: at a terminal decode prompts on /dev/tty;
with no terminal the call is denied and the model is told why.

   decode run "rename Foo to Bar in pkg/x and run go test" --mode edit --allow 'bash(go test *)'
   decode run -m script:testdata/scripts/demo.json "offline, deterministic"`,
		Flags:        agentFlags(true),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			return runF(c, agentOptions(f, "run", c))
		},
	}
}
