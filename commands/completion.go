package commands

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// CompletionOptions are the inputs of decode completion.
type CompletionOptions struct {
	Out   io.Writer
	Shell string
	// App is the command tree to complete (fish's script lists it).
	App *cli.App
}

// NewCmdCompletion builds `decode completion`. runF replaces the run
// function in tests.
func NewCmdCompletion(f *Factory, runF func(*CompletionOptions) error) *cli.Command {
	if runF == nil {
		runF = completionRun
	}
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes decode's commands and flags. bash and zsh
ask decode itself (--generate-bash-completion) at each TAB; fish gets the
whole command tree.

   decode completion bash > /etc/bash_completion.d/decode
   decode completion zsh > "${fpath[1]}/_decode"
   decode completion fish > ~/.config/fish/completions/decode.fish`,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("decode completion takes one shell: bash, zsh or fish")
			}
			return runF(&CompletionOptions{Out: f.IO.Out, Shell: c.Args().First(), App: c.App})
		},
	}
}

func completionRun(o *CompletionOptions) error {
	var script string
	switch o.Shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		s, err := o.App.ToFishCompletion()
		if err != nil {
			return fmt.Errorf("fish completion: %w", err)
		}
		script = s
	default:
		return usageErrorf("no completion for shell %q: use bash, zsh or fish", o.Shell)
	}
	script = strings.ReplaceAll(script, "{{prog}}", o.App.Name)
	_, err := io.WriteString(o.Out, script)
	return err
}

// bashCompletion is urfave/cli's bash script (autocomplete/bash_autocomplete)
// for one program: at each TAB it runs the words typed so far with
// --generate-bash-completion and offers what decode prints.
const bashCompletion = `# bash completion for {{prog}}: source it, or put it in /etc/bash_completion.d/{{prog}}
# Works in a plain bash; uses the bash-completion package's helpers when loaded.
_{{prog}}_bash_autocomplete() {
  local cur words cword opts requestComp
  COMPREPLY=()
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur="${COMP_WORDS[COMP_CWORD]}"
  fi
  words=("${words[@]:0:$cword}")
  if [[ "$cur" == "-"* ]]; then
    requestComp="${words[*]} ${cur} --generate-bash-completion"
  else
    requestComp="${words[*]} --generate-bash-completion"
  fi
  opts=$(eval "${requestComp}" 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}

complete -o bashdefault -o default -o nospace -F _{{prog}}_bash_autocomplete {{prog}}
`

// zshCompletion is urfave/cli's zsh script (autocomplete/zsh_autocomplete)
// for one program.
const zshCompletion = `#compdef {{prog}}
# zsh completion for {{prog}}: put it in a directory of $fpath as _{{prog}}

_{{prog}}_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi

  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

compdef _{{prog}}_zsh_autocomplete {{prog}}
`
