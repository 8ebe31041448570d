package commands

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// fishCompletion writes the fish script for app: one `complete` line per
// visible command and flag, from the command tree, and a function that asks
// decode itself (--generate-bash-completion, as the bash and zsh scripts do)
// for the values completeValues knows: sessions, models, modes, hook names.
// urfave/cli's own ToFishCompletion repeats the global flags, offers its
// help command ("help h") under the running command and keeps offering a
// command's subcommands after one was typed.
func fishCompletion(app *cli.App) string {
	prog := app.Name
	fn := "__fish_" + strings.ReplaceAll(prog, "-", "_")
	var b strings.Builder
	fmt.Fprintf(&b, `# fish completion for %[1]s: put it in ~/.config/fish/completions/%[1]s.fish
# Commands and flags come from %[1]s's command tree; sessions, models, modes
# and hook names come from %[1]s itself at each TAB.

function %[2]s_path --description 'print the %[1]s command and subcommand typed so far'
    set -l path
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch "$path"
`, prog, fn)
	writeFishPathCases(&b, "", fishCommands(app.VisibleCommands()), app.VisibleFlags())
	fmt.Fprintf(&b, `        end
    end
    echo $path
end

function %[2]s_at --description 'test whether the %[1]s command typed so far is $argv'
    set -l path (%[2]s_path)
    test "$path" = "$argv"
end

function %[2]s_values --description 'ask %[1]s for the values it completes here'
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    if string match -q -- '--*=*' $cur
        set -a words (string split -m 1 = -- $cur)[1]  # --model=VALUE
    else if string match -qr -- '^-[^-]' $cur
        set -a words (string sub -l 2 -- $cur)  # -mVALUE
    end
    command -q $words[1]; or return
    $words --generate-bash-completion 2>/dev/null
end

`, prog, fn)
	writeFishFlags(&b, prog, fn, "", app.VisibleFlags())
	writeFishCommands(&b, prog, fn, "", fishCommands(app.VisibleCommands()))
	return b.String()
}

// writeFishPathCases writes the cases of the path function's switch for the
// commands under path, then for their subcommands. A word after one of the
// level's flags that takes a value is that value, not a command.
func writeFishPathCases(b *strings.Builder, path string, cmds []*cli.Command, flags []cli.Flag) {
	if len(cmds) == 0 {
		return
	}
	fmt.Fprintf(b, "            case %s\n                switch $w\n", fishQuote(path))
	if names := fishValueFlagWords(flags); len(names) > 0 {
		fmt.Fprintf(b, "                    case %s\n                        set skip 1\n", strings.Join(names, " "))
	}
	for _, c := range cmds {
		fmt.Fprintf(b, "                    case %s\n                        set -a path %s\n", strings.Join(c.Names(), " "), c.Name)
	}
	b.WriteString("                end\n")
	for _, c := range cmds {
		writeFishPathCases(b, strings.TrimSpace(path+" "+c.Name), fishCommands(c.VisibleCommands()), c.VisibleFlags())
	}
}

// fishCommands drops the help command urfave/cli adds to a command as it
// runs (completion itself, here): --help is offered as a flag instead.
func fishCommands(cmds []*cli.Command) []*cli.Command {
	return slices.DeleteFunc(slices.Clone(cmds), func(c *cli.Command) bool { return c.Name == "help" })
}

// fishValueFlagWords are the spellings (-C, --dir) of the flags that take a value.
func fishValueFlagWords(flags []cli.Flag) []string {
	var words []string
	for _, fl := range flags {
		if df, ok := fl.(cli.DocGenerationFlag); ok && df.TakesValue() {
			for _, n := range fl.Names() {
				words = append(words, flagSpelling(n))
			}
		}
	}
	return words
}

func flagSpelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// writeFishCommands writes the commands under path, each followed by its
// flags, values and subcommands.
func writeFishCommands(b *strings.Builder, prog, fn, path string, cmds []*cli.Command) {
	for _, c := range cmds {
		fmt.Fprintf(b, "complete -c %s -n %s -f -a %s -d %s\n",
			prog, fishQuote(strings.TrimSpace(fn+"_at "+path)), fishQuote(c.Name), fishQuote(c.Usage))
		sub := strings.TrimSpace(path + " " + c.Name)
		writeFishFlags(b, prog, fn, sub, c.VisibleFlags())
		if slices.Contains(positionalValueCommands(), c.Name) {
			fmt.Fprintf(b, "complete -c %s -n %s -f -a %s\n", prog, fishQuote(fn+"_at "+sub), fishQuote("("+fn+"_values)"))
		}
		writeFishCommands(b, prog, fn, sub, fishCommands(c.VisibleCommands()))
	}
}

// writeFishFlags writes one line per flag of the command at path, and
// --help once (the app's flags carry it; a command's gain it when it runs).
func writeFishFlags(b *strings.Builder, prog, fn, path string, flags []cli.Flag) {
	cond := fishQuote(strings.TrimSpace(fn + "_at " + path))
	seen := map[string]bool{}
	line := func(names []string, args, usage string) {
		if seen[names[0]] {
			return
		}
		seen[names[0]] = true
		fmt.Fprintf(b, "complete -c %s -n %s%s%s -d %s\n", prog, cond, fishFlagNames(names), args, fishQuote(strings.ReplaceAll(usage, "`", "")))
	}
	for _, fl := range flags {
		df, ok := fl.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		args := ""
		if df.TakesValue() {
			args = " -r" // a file or a word: fish offers files
		}
		if _, ok := flagValues[fl.Names()[0]]; ok && df.TakesValue() {
			// A line of its own without -d: fish would give every value
			// the flag's description.
			args = " -x"
			fmt.Fprintf(b, "complete -c %s -n %s%s -x -a %s\n", prog, cond, fishFlagNames(fl.Names()), fishQuote("("+fn+"_values)"))
		}
		line(fl.Names(), args, df.GetUsage())
	}
	line([]string{"help", "h"}, "", "show help")
}

// fishFlagNames are a flag's names as complete's options: -s m -l model.
func fishFlagNames(names []string) string {
	var s string
	for _, n := range names {
		if len(n) == 1 {
			s += " -s " + n
		} else {
			s += " -l " + n
		}
	}
	return s
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
