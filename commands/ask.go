package commands

import (
	"github.com/urfave/cli/v2"
)

// NewCmdAsk builds `decode ask`. runF replaces the run function in tests.
func NewCmdAsk(f *Factory, runF func(*cli.Context, *AgentOptions) error) *cli.Command {
	if runF == nil {
		runF = agentRun
	}
	return &cli.Command{
		Name:      "ask",
		Usage:     "answer a question with read-only tools (read, glob, grep)",
		ArgsUsage: "[PROMPT]",
		Description: `Answers one question about the code in the current directory. Piped stdin is
attached to the prompt; with no PROMPT, stdin is the prompt. Only read-only
tools are offered, so ask never changes anything.

   git diff | decode ask "what does this change do?"
   decode ask "where is the config loaded?"`,
		Flags:        agentFlags(false),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "ask", c)
			o.Mode = "plan"
			return runF(c, o)
		},
	}
}
