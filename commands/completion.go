package commands

import (
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
		Description: `Prints a script that completes decode's commands and flags, and the
values decode knows: session ids, models and aliases after -m, modes,
--on-ask, --sandbox, hook names and shells. bash and zsh ask decode itself
(--generate-bash-completion) at each TAB; fish gets the command tree with
descriptions and asks decode for the values. Each is tested in the real
shell (bash --norc, zsh -f, fish --no-config); bash needs no
bash-completion package.

   decode completion bash > /etc/bash_completion.d/decode   # or: source <(decode completion bash)
   decode completion zsh > "${fpath[1]}/_decode"            # or, after compinit: source <(decode completion zsh)
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
		script = fishCompletion(o.App)
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

// zshCompletion asks decode, like the bash script, for the words it
// offers after the ones typed (unquoted). Values such as openai:gpt-4.1
// have their colons escaped, or _describe would read them as
// "name:description". Installed in $fpath as _{{prog}}, the first TAB
// completes too (the file is the autoloaded function's body).
const zshCompletion = `#compdef {{prog}}
# zsh completion for {{prog}}: put it in a directory of $fpath as _{{prog}},
# or source it after compinit.

_{{prog}}() {
  local -a request opts
  local cur=${words[CURRENT]}
  request=("${(@Q)words[1,CURRENT-1]}")
  if [[ "$cur" == -* ]]; then
    request+=("${(Q)cur}")
  fi
  opts=("${(@f)$("${request[@]}" --generate-bash-completion 2>/dev/null)}")
  if [[ -n "${opts[1]}" ]]; then
    opts=("${(@)opts//:/\\:}")
    _describe 'values' opts
  else
    _files
  fi
}

if [[ "${funcstack[1]}" == _{{prog}} ]]; then
  _{{prog}} "$@"
else
  compdef _{{prog}} {{prog}}
fi
`
