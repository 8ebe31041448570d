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
		Usage:     "answer a question with read-only tools (read, glob, grep, web_fetch)",
		ArgsUsage: "[PROMPT]",
		Description: `Answers one question about the code in the current directory. Piped stdin is
attached to the prompt; with no PROMPT, stdin is the prompt. Only read-only
tools are offered, so ask never changes anything; web_fetch asks at a
terminal and is denied (with the reason, to the model) without one.

   git diff | decode ask "what does this change do?"
   decode ask "where is the config loaded?"
   decode ask -f screenshot.png -f app.log "why does the page look like this?"`,
		Flags:        append(agentFlags(false), lastMessageFlag(), attachFlag()),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "ask", c)
			o.Mode = "plan"
			// A question never pauses: a call that needs approval (web_fetch
			// to a host no rule allows) is denied with the reason instead.
			o.OnAsk = "deny"
			return runF(c, o)
		},
	}
}
