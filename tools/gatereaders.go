package tools

import (
	"os"
	"path/filepath"
	"strings"
)

// In edit mode with the sandbox active every command runs, held to the
// workspace by the operating system. Without it (--sandbox off, or a
// kernel that cannot confine), nothing holds a command, so edit mode still
// asks for commands, except those that can only read the workspace: one
// of a few programs that read files and print, with no option that writes
// a file or runs another program, given only paths inside the workspace.
// The parser's judgement is all there is here, so the lists are short and
// everything unsure asks.

// workspaceReaders are the programs edit mode without the sandbox runs
// without asking, with the options (long or short) that disqualify a call.
var workspaceReaders = map[string][]string{
	"ls": nil, "cat": nil, "head": nil, "tail": nil, "wc": nil, "nl": nil, "tac": nil,
	// Recursion that follows symbolic links reads wherever a link in the
	// tree points: grep -R, rg -L, diff -r (diff follows links).
	"grep": {"-R", "--dereference-recursive"}, "egrep": {"-R", "--dereference-recursive"}, "fgrep": {"-R", "--dereference-recursive"},
	"rg": {"--pre", "--pre-glob", "--hostname-bin", "-L", "--follow", "-z", "--search-zip"},
	"cd": nil, "pwd": nil, "stat": nil, "du": nil, "diff": {"-r", "--recursive"}, "cmp": nil,
	"basename": nil, "dirname": nil, "realpath": nil, "readlink": nil,
	// printf -v assigns, and an array subscript in the name is evaluated:
	// printf -v 'a[$(cmd)]' runs cmd.
	"md5sum": nil, "sha1sum": nil, "sha256sum": nil, "echo": nil, "printf": {"-v"}, "true": nil, "false": nil,
}

// workspaceGit are the git subcommands edit mode without the sandbox runs
// without asking, with the options that disqualify a call (--output writes
// a file; grep -O runs a pager command).
var workspaceGit = map[string][]string{
	"status": nil, "diff": nil, "log": nil, "show": nil,
	"ls-files": nil, "ls-tree": nil, "blame": nil, "grep": {"-O", "--open-files-in-pager"},
	"rev-parse": nil, "shortlog": nil, "describe": nil,
}

// gitBad are the options that disqualify every git reader: --output writes
// a file (git diff, log, show, blame and shortlog all take it).
var gitBad = []string{"--output"}

// workspaceReader checks commands against the workspace from the
// directories a line may run them in.
type workspaceReader struct {
	g    *Gate
	dirs []string
}

// workspaceReader returns the reader for a line in edit mode without the
// sandbox, or nil when no command of it can run without asking: another
// mode, the sandbox active, a file written, a directory known only at run
// time or outside the workspace, or a file read from outside it (< FILE).
func (g *Gate) workspaceReader(an *shellAnalysis, dirs []string, dirsKnown bool) *workspaceReader {
	if g.mode != ModeEdit || g.sandboxed || len(an.writes) > 0 || an.expands || !dirsKnown {
		return nil
	}
	r := &workspaceReader{g: g, dirs: dirs}
	for _, d := range dirs {
		if !g.resolveFrom(d, ".").allowable() {
			return nil
		}
	}
	for _, w := range an.reads {
		if !r.inside(w) {
			return nil
		}
	}
	return r
}

// onlyReads reports whether the command's words are a workspace reader
// called with none of its disqualifying options and only paths inside the
// workspace. Every argument that is not an option counts as a path (a
// grep pattern too): an argument that would be outside as a path asks.
func (r *workspaceReader) onlyReads(words []shellWord) bool {
	if len(words) == 0 || !words[0].literal || strings.ContainsAny(words[0].text, `/\`) {
		return false // a program by path may be one the model wrote
	}
	bad, ok := workspaceReaders[words[0].text]
	args := words[1:]
	if words[0].text == "git" {
		// The global options that only turn something off; any other
		// (-C, -c, --git-dir, --exec-path) asks.
		for len(args) > 0 && args[0].literal && (args[0].text == "--no-pager" || args[0].text == "-P" || args[0].text == "--no-optional-locks") {
			args = args[1:]
		}
		if len(args) == 0 || !args[0].literal {
			return false
		}
		// git's own options (-C, -c, --git-dir) come before the subcommand.
		bad, ok = workspaceGit[args[0].text]
		bad = append(append([]string(nil), bad...), gitBad...)
		args = args[1:]
		for _, d := range r.dirs {
			if gitDirAbove(d) {
				return false
			}
		}
	}
	if !ok {
		return false
	}
	if words[0].text == "cd" && (len(args) != 1 || strings.HasPrefix(args[0].text, "-")) {
		return false // cd alone goes home, cd - back to where it was
	}
	for _, w := range args {
		if w.procSubst {
			continue // <(cmd): a command checked on its own
		}
		if !w.literal && r.globsAnOption(w.text) {
			return false // * matching a file named --pre=sh is that option
		}
		if strings.HasPrefix(w.text, "-") && w.literal {
			if disqualifies(w.text, bad) {
				return false
			}
			name, value, hasValue := strings.Cut(w.text, "=")
			if hasValue {
				if !r.inside(shellWord{text: value, literal: true}) {
					return false
				}
			} else if strings.ContainsAny(name, `/\~`) {
				return false // a value glued to a short option (-f/etc/x)
			}
			continue
		}
		if !r.inside(w) {
			return false
		}
	}
	return true
}

// disqualifies reports whether the option opt is one of bad: a long
// option or an abbreviation of one (git takes unambiguous prefixes), or a
// cluster of short options holding a bad letter.
func disqualifies(opt string, bad []string) bool {
	name, _, _ := strings.Cut(opt, "=")
	for _, b := range bad {
		switch {
		case strings.HasPrefix(b, "--"):
			if strings.HasPrefix(name, b) || (len(name) > 2 && strings.HasPrefix(b, name)) {
				return true
			}
		case !strings.HasPrefix(name, "--") && strings.ContainsRune(name[1:], rune(b[1])):
			return true
		}
	}
	return false
}

// inside reports whether w, as a path, lies in the workspace from every
// directory the line may run in. A glob must be a plain one (* and ? in
// names, none able to match ..); any other expansion is unknown.
func (r *workspaceReader) inside(w shellWord) bool {
	if !w.literal && !plainGlob(w.text) {
		return false
	}
	for _, d := range r.dirs {
		gp := r.g.resolveFrom(d, w.text)
		if !gp.allowable() {
			return false
		}
		if filepath.IsAbs(w.text) {
			break
		}
	}
	return true
}

// plainGlob reports whether s is a glob of * and ? over plain names, with
// no component starting with a dot that a pattern could make "..".
func plainGlob(s string) bool {
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("._-/*?+,:=%@", c):
		default:
			return false
		}
	}
	for _, comp := range strings.Split(s, "/") {
		if strings.HasPrefix(comp, ".") && strings.ContainsAny(comp, "*?") {
			return false
		}
	}
	return true
}

// gitDirAbove reports whether dir, or a directory above it, is shaped like
// a git directory (a HEAD file beside objects, refs or commondir) other
// than one named .git. Git run there takes it for a bare repository and
// obeys its config and info/attributes (core.fsmonitor, a diff driver's
// textconv command, …), which are ordinary files anyone who may write in
// the workspace can write, and objects/info/alternates can borrow the
// workspace's own commits for it: a reader would run their command. A
// .git directory's config is protected by the gate in every mode.
func gitDirAbove(dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for {
		if filepath.Base(dir) != ".git" && gitDirShaped(dir) {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// gitDirShaped reports whether dir holds what git looks for in a git
// directory.
func gitDirShaped(dir string) bool {
	if fi, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil || fi.IsDir() {
		return false
	}
	for _, name := range []string{"objects", "refs", "commondir"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// globsAnOption reports whether the glob pattern, expanded now from any
// directory the line runs in, matches a name that the program would take
// for an option (a file the model named "--output=x" or "-n").
func (r *workspaceReader) globsAnOption(pattern string) bool {
	for _, d := range r.dirs {
		p := pattern
		if !filepath.IsAbs(p) {
			p = filepath.Join(d, p)
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return true
		}
		for _, m := range matches {
			rel := m
			if !filepath.IsAbs(pattern) {
				if rel, err = filepath.Rel(d, m); err != nil {
					return true
				}
			}
			if strings.HasPrefix(rel, "-") {
				return true
			}
		}
	}
	return false
}
