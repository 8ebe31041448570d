package commands

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// rootAction runs when the first word names no command: no word prints the
// help; `help CMD` prints that command's help; anything else is a usage
// error (exit 2) that suggests the closest command, so a typo never passes
// silently in a script.
func rootAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	if c.Args().First() == "help" {
		return helpAction(c)
	}
	return unknownCommand(c.App, c.Args().First())
}

// helpAction is `decode help [CMD]`. It is not a registered command, which
// would take away urfave/cli's --help flag.
func helpAction(c *cli.Context) error {
	switch c.NArg() {
	case 1:
		return cli.ShowAppHelp(c)
	case 2:
		name := c.Args().Get(1)
		if c.App.Command(name) == nil || name == "help" {
			return unknownCommand(c.App, name)
		}
		return cli.ShowCommandHelp(c, name)
	}
	return usageErrorf("decode help takes one command, e.g. decode help run")
}

// unknownCommand is the error for a word that names no command.
func unknownCommand(app *cli.App, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := closest(name, commandNames(app)); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return &UsageError{Msg: msg + " (see decode --help)"}
}

// NewCmdVersion builds `decode version`, hidden: the same line as
// decode --version, since `version` is what go, gh and docker accept.
func NewCmdVersion(f *Factory) *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print decode's version (same as --version)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("decode version takes no arguments")
			}
			cli.ShowVersion(c)
			return nil
		},
	}
}

func commandNames(app *cli.App) []string {
	var names []string
	for _, c := range app.Commands {
		if c.Hidden {
			continue
		}
		names = append(names, c.Names()...)
	}
	return names
}

var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -+([^\s=]+)`)

// flagSuggestion is " (did you mean --model?)" for a mistyped flag in err,
// or "".
func flagSuggestion(c *cli.Context, err error) string {
	m := undefinedFlag.FindStringSubmatch(err.Error())
	if m == nil || c == nil || c.Command == nil {
		return ""
	}
	if m[1] == "v" || m[1] == "verbose" {
		// decode -v log: -v moved to the command, which has none.
		return "; -v (--verbose) is a flag of the commands that run the model (ask, run, plan, resume, replay, compact, acp); decode -v alone prints the version"
	}
	var names []string
	for _, fl := range c.Command.Flags {
		names = append(names, fl.Names()...)
	}
	s := closest(m[1], names)
	if s == "" {
		return ""
	}
	if len(s) == 1 {
		return fmt.Sprintf("; did you mean -%s?", s)
	}
	return fmt.Sprintf("; did you mean --%s?", s)
}

// closest is the candidate nearest to word by edit distance (a swap of two
// neighbouring letters counts as one edit), or "" when none is near enough
// to be a typo of it.
func closest(word string, candidates []string) string {
	word = strings.ToLower(word)
	best, bestD := "", 0
	for _, c := range candidates {
		if len(c) < 2 && len(word) > 2 {
			continue
		}
		d := editDistance(word, c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	if len(word) > 8 {
		limit = 3
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
