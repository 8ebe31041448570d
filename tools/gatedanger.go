package tools

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// dangerousFloors returns floors for options that turn commonly allowed,
// read-only-looking commands into ones that write files or run programs:
// an allow rule for the command does not cover them, so they ask.
func dangerousFloors(words []shellWord) []floor {
	name := path.Base(words[0].text)
	args := words[1:]
	has := func(test func(string) bool) string {
		for _, w := range args {
			if test(w.text) {
				return w.text
			}
		}
		return ""
	}
	prefixed := func(opts ...string) func(string) bool {
		return func(s string) bool {
			for _, o := range opts {
				if s == o || strings.HasPrefix(s, o+"=") || (len(o) == 2 && o[1] != '-' && strings.HasPrefix(s, o) && !strings.HasPrefix(s, "--")) {
					return true
				}
			}
			return false
		}
	}
	var found, why string
	switch name {
	case "git":
		sub := gitSubcommand(args)
		switch sub {
		case "diff", "log", "show", "format-patch", "range-diff":
			found, why = has(prefixed("--output", "--no-index", "--ext-diff", "--textconv")), "writes a file or runs a program"
		case "grep":
			found, why = has(prefixed("-O", "--open-files-in-pager", "--no-index")), "runs a pager program or reads outside the repository"
		case "blame":
			found, why = has(prefixed("--contents")), "reads a file from anywhere"
		}
	case "sed":
		found, why = sedWrites(args), "its script writes files (w) or runs commands (e)"
	case "find":
		found, why = has(func(s string) bool {
			switch s {
			case "-fprint", "-fprint0", "-fprintf", "-fls", "-exec", "-execdir", "-ok", "-okdir", "-delete":
				return true
			}
			return false
		}), "writes files, deletes or runs commands"
	case "rg":
		found, why = has(prefixed("--pre")), "runs a preprocessor program on every file"
	case "go":
		found, why = has(prefixed("-exec", "-toolexec", "-o", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace", "-coverprofile", "-outputdir")), "runs another program or writes a file"
		if len(args) > 1 && args[0].text == "env" && has(prefixed("-w", "-u")) != "" {
			found, why = "env -w", "changes go's configuration"
		}
	case "awk", "gawk", "mawk", "nawk":
		found, why = has(func(s string) bool { return awkRuns.MatchString(s) }), "its program runs commands or writes files"
	case "xargs":
		// what xargs runs is checked on its own
	case "tar":
		found, why = has(prefixed("--to-command", "--use-compress-program", "-I", "--checkpoint-action")), "runs another program"
	case "less", "more", "man":
		found, why = "", ""
	}
	if found == "" {
		return nil
	}
	return []floor{{reason: fmt.Sprintf("%s %s %s, which no allow rule for %s covers", name, quoteSnippet(found), why, name), contained: true}}
}

// awkRuns matches awk programs that run commands or write files.
var awkRuns = regexp.MustCompile(`system\s*\(|\|\s*getline|\|\s*"|print[f]?[^;}]*>|close\s*\(|ENVIRON|PROCINFO`)

// gitSubcommand returns git's subcommand, skipping global options.
func gitSubcommand(args []shellWord) string {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-C" || t == "-c" || t == "--git-dir" || t == "--work-tree" || t == "--namespace":
			i++
		case strings.HasPrefix(t, "-"):
		default:
			return t
		}
	}
	return ""
}

// sedWrites returns the sed script (or option) that writes files or runs
// commands: the w, W and e commands, s///w and s///e, -i is an edit the
// gate sees as a write on its own.
func sedWrites(args []shellWord) string {
	var scripts []string
	scriptGiven := false
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-e" || t == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1].text)
				i++
			}
			scriptGiven = true
		case strings.HasPrefix(t, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(t, "--expression="))
			scriptGiven = true
		case t == "-f" || t == "--file" || strings.HasPrefix(t, "--file="):
			return t // a script file the gate cannot read
		case strings.HasPrefix(t, "-"):
		case !scriptGiven:
			scripts = append(scripts, t)
			scriptGiven = true
		}
	}
	for _, s := range scripts {
		if sedRunsScript(s) {
			return s
		}
	}
	return ""
}

// sedRunsScript reports whether a sed script has a command that writes a
// file or runs one: e, w or W after an optional address, or s///e, s///w.
// Scripts it cannot read count as running.
func sedRunsScript(script string) bool {
	for _, cmd := range strings.FieldsFunc(script, func(r rune) bool { return r == ';' || r == '\n' || r == '{' || r == '}' }) {
		c := strings.TrimLeft(cmd, " \t")
		// skip the address: line numbers, $, /regex/, ranges and !
		for len(c) > 0 {
			switch {
			case c[0] >= '0' && c[0] <= '9' || c[0] == '$' || c[0] == ',' || c[0] == '!' || c[0] == ' ' || c[0] == '~' || c[0] == '+':
				c = c[1:]
			case c[0] == '/' || c[0] == '\\':
				d := c[0]
				if d == '\\' && len(c) > 1 {
					d, c = c[1], c[1:]
				}
				end := closing(c, d)
				if end < 0 {
					return true
				}
				c = c[end+1:]
				c = strings.TrimLeft(c, "IM")
			default:
				goto command
			}
		}
	command:
		if c == "" {
			continue
		}
		switch c[0] {
		case 'e', 'w', 'W':
			return true
		case 's', 'y':
			if len(c) < 2 {
				continue
			}
			d := c[1]
			rest := c[1:]
			for n := 0; n < 2; n++ {
				end := closing(rest, d)
				if end < 0 {
					return true
				}
				rest = rest[end:]
			}
			if c[0] == 's' && strings.ContainsAny(strings.TrimPrefix(rest, string(d)), "ew") {
				return true
			}
		}
	}
	return false
}

// closing returns the index of the delimiter d that closes s[0] (also d),
// skipping escaped ones, or -1.
func closing(s string, d byte) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case d:
			return i
		}
	}
	return -1
}

// bashisms matches what POSIX shells (and zsh) parse differently from
// bash: &> and |& redirections, [[ ]], (( )), $” and $"" quoting, process
// substitution, here-strings, arrays, brace expansion, ${x/..} and
// ${x:..}, zsh's =cmd and glob qualifiers, comments after a backslash.
var bashisms = regexp.MustCompile(`&>|\|&|\[\[|\(\(|\$'|\$"|[<>]\(|<<<|=\(|\{[^}]*,[^}]*\}|\$\{[^}]*[/:^,@]|(^|\s)=[a-zA-Z]|\$~|\*\(|#\\|;&|function\s`)

// commentContinuation matches a comment whose last character is a
// backslash: bash ends the comment at the newline and runs the next line,
// while a parser that joins the lines hides it.
var commentContinuation = regexp.MustCompile(`(^|[\s;&|()])#[^\n]*\\\r?\n`)

// testVarCode reports a [[ -v NAME ]] or test -v operand that bash
// evaluates: a subscript with an expansion in it.
func testVarCode(w *syntax.Word) bool {
	lit := w.Lit()
	if lit != "" && !strings.Contains(lit, "[") {
		return false
	}
	var b strings.Builder
	_ = syntax.NewPrinter().Print(&b, w)
	s := b.String()
	return strings.ContainsAny(s, "[") && (strings.Contains(s, "$") || strings.Contains(s, "`"))
}
