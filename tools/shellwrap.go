package tools

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// unwrapped describes what a wrapper command (sudo, timeout, bash -c, eval)
// runs, so the gate can check that as well.
type unwrapped struct {
	// inner are the commands the wrapper runs (several for find -exec).
	inner [][]shellWord
	// script is a string the wrapper runs as shell code (bash -c, eval).
	script *shellWord
	// floors hold for the wrapper, whatever the rules say about what it runs.
	floors []floor
	// wrapperFloor holds unless an allow rule matches the wrapper itself.
	wrapperFloor string
	// writes are files the wrapper itself writes (time -o FILE).
	writes []shellWord
	// opaque, when set, says why the gate cannot tell what the wrapper runs;
	// it is then checked as an ordinary command that needs approval.
	opaque string
}

// recordWrapped records a wrapper and what it runs. It reports false when
// words are not a wrapper use the gate understands as such (env with no
// command prints the environment), and the caller records an ordinary
// command.
func (a *shellAnalyzer) recordWrapped(words []shellWord, floors []floor, depth int) bool {
	u, ok := unwrapShell(words)
	if !ok {
		return false
	}
	if u.opaque != "" {
		floors = append(floors, floor{reason: u.opaque, hides: true})
		a.add(cmdUnit{kind: unitCommand, words: words, floors: floors})
		return true
	}
	floors = append(floors, u.floors...)
	a.add(cmdUnit{kind: unitWrapper, words: words, floors: floors, wrapperFloor: u.wrapperFloor})
	for _, w := range u.writes {
		a.out.writes = append(a.out.writes, writeUnit{target: w})
	}
	if u.script != nil {
		if u.script.literal {
			a.parse(u.script.text, depth+1)
		} else {
			a.add(cmdUnit{kind: unitWrapper, words: words, floors: []floor{{
				reason: fmt.Sprintf("%s runs the script %s, which is only known at run time", words[0].text, quoteSnippet(u.script.text)),
				hides:  true,
			}}})
		}
	}
	for _, inner := range u.inner {
		a.command(inner, nil, depth)
	}
	return true
}

// unwrapShell recognises the wrappers the gate looks through.
func unwrapShell(words []shellWord) (unwrapped, bool) {
	name := path.Base(words[0].text)
	switch name {
	case "env":
		return unwrapEnv(words)
	case "nice", "nohup", "timeout", "stdbuf", "setsid", "ionice", "command", "builtin", "exec", "time":
		spec := wrapperSpecs(name)
		if name == "command" && hasAnyOpt(words, "vV") {
			return unwrapped{}, false // command -v only looks the name up
		}
		return unwrapOptions(words, spec)
	case "sudo", "doas":
		u, ok := unwrapOptions(words, wrapperSpecs(name))
		u.wrapperFloor = name + " runs the command with raised privileges"
		return u, ok
	case "xargs":
		return unwrapXargs(words), true
	case "find":
		return unwrapFind(words)
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox":
		return unwrapShellC(words)
	case "eval":
		return unwrapEval(words), true
	case "trap":
		return unwrapTrap(words)
	case "su":
		return unwrapSu(words)
	}
	return unwrapped{}, false
}

// optSpec lists a command's options: the parser stops at an option it does
// not know, as it cannot tell whether that option takes an argument.
type optSpec struct {
	short    string   // short options without an argument
	shortArg string   // short options that take one
	shortOpt string   // short options with an optional attached argument (xargs -i)
	long     []string // long options without an argument, or with =value
	longArg  []string // long options taking the next word unless given =value
	// operands is how many operands come before the command (timeout's duration).
	operands int
	// assigns allows NAME=value words before the command (sudo).
	assigns bool
}

// wrapperSpecs returns the options of a wrapper the gate looks through.
func wrapperSpecs(name string) optSpec {
	switch name {
	case "nice":
		return optSpec{short: "0123456789", shortArg: "n", longArg: []string{"adjustment"}}
	case "timeout":
		return optSpec{short: "fpv", shortArg: "ks", long: []string{"foreground", "preserve-status", "verbose"},
			longArg: []string{"kill-after", "signal"}, operands: 1}
	case "stdbuf":
		return optSpec{shortArg: "ioe", longArg: []string{"input", "output", "error"}}
	case "setsid":
		return optSpec{short: "cfw", long: []string{"ctty", "fork", "wait"}}
	case "ionice":
		return optSpec{short: "t", shortArg: "cn", long: []string{"ignore"}, longArg: []string{"class", "classdata"}}
	case "command":
		return optSpec{short: "p"}
	case "exec":
		return optSpec{short: "cl", shortArg: "a"}
	case "time":
		return optSpec{short: "pvaq", shortArg: "fo", long: []string{"append", "verbose", "quiet", "portability"},
			longArg: []string{"format", "output"}}
	case "sudo":
		return optSpec{short: "AbEeHiKklnPSsVv", shortArg: "CDghpRrTtUu", assigns: true,
			long: []string{"askpass", "background", "bell", "edit", "preserve-env", "preserve-groups", "set-home",
				"login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "stdin", "shell", "validate"},
			longArg: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
				"command-timeout", "other-user", "user"}}
	case "doas":
		return optSpec{short: "nsL", shortArg: "uC"}
	}
	return optSpec{} // nohup, builtin
}

// parseOpts reads the options of words from index i. It returns the index
// of the first operand, the options taking a value with their value, and
// false when it meets an option it does not know or a word it cannot see
// (an unquoted $x may split into several options).
func (s optSpec) parseOpts(words []shellWord, i int) (int, map[string]shellWord, bool) {
	vals := map[string]shellWord{}
	for i < len(words) {
		w := words[i]
		if !w.literal {
			return i, vals, false
		}
		t := w.text
		if t == "--" {
			return i + 1, vals, true
		}
		if len(t) < 2 || t[0] != '-' {
			return i, vals, true
		}
		if strings.HasPrefix(t, "--") {
			name, val, hasVal := strings.Cut(t[2:], "=")
			switch {
			case slices.Contains(s.longArg, name) && !hasVal:
				if i+1 >= len(words) || !words[i+1].literal {
					return i, vals, false
				}
				vals[name] = words[i+1]
				i += 2
			case slices.Contains(s.longArg, name) || slices.Contains(s.long, name):
				vals[name] = shellWord{text: val, literal: true}
				i++
			default:
				return i, vals, false
			}
			continue
		}
		next, ok := s.parseCluster(words, i, vals)
		if !ok {
			return i, vals, false
		}
		i = next
	}
	return i, vals, true
}

// parseCluster reads one word of short options (-n10, -xc) and returns the
// index of the word after it and any argument it took.
func (s optSpec) parseCluster(words []shellWord, i int, vals map[string]shellWord) (int, bool) {
	t := words[i].text
	for j := 1; j < len(t); j++ {
		c := t[j]
		switch {
		case strings.IndexByte(s.short, c) >= 0:
			vals[string(c)] = shellWord{literal: true}
		case strings.IndexByte(s.shortOpt, c) >= 0:
			vals[string(c)] = shellWord{text: t[j+1:], literal: true}
			return i + 1, true
		case strings.IndexByte(s.shortArg, c) >= 0:
			if j+1 < len(t) {
				vals[string(c)] = shellWord{text: t[j+1:], literal: true}
				return i + 1, true
			}
			// An unquoted $x as the argument may split into more words.
			if i+1 >= len(words) || !words[i+1].literal {
				return i, false
			}
			vals[string(c)] = words[i+1]
			return i + 2, true
		default:
			return i, false
		}
	}
	return i + 1, true
}

// hasAnyOpt reports whether a literal short-option word before the first
// operand contains one of the letters.
func hasAnyOpt(words []shellWord, letters string) bool {
	for _, w := range words[1:] {
		if !w.literal || len(w.text) < 2 || w.text[0] != '-' || w.text == "--" {
			return false
		}
		if !strings.HasPrefix(w.text, "--") && strings.ContainsAny(w.text[1:], letters) {
			return true
		}
	}
	return false
}

// unwrapOptions handles wrappers of the form NAME [options] [operands] CMD...
func unwrapOptions(words []shellWord, spec optSpec) (unwrapped, bool) {
	name := words[0].text
	i, vals, ok := spec.parseOpts(words, 1)
	if !ok {
		return opaqueWrapper(name, words, i), true
	}
	for n := 0; n < spec.operands; n++ {
		if i >= len(words) {
			return unwrapped{}, false
		}
		if !words[i].literal {
			return opaqueWrapper(name, words, i), true
		}
		i++
	}
	var u unwrapped
	if spec.assigns {
		i, u.floors = skipAssigns(words, i)
	}
	if out, ok := vals["o"]; ok && path.Base(name) == "time" {
		u.writes = append(u.writes, out)
	}
	if out, ok := vals["output"]; ok && path.Base(name) == "time" {
		u.writes = append(u.writes, out)
	}
	if i >= len(words) {
		return unwrapped{}, false // no command: an ordinary command of its own
	}
	u.inner = [][]shellWord{words[i:]}
	return u, true
}

// opaqueWrapper is a wrapper whose command the gate cannot find.
func opaqueWrapper(name string, words []shellWord, i int) unwrapped {
	at := ""
	if i < len(words) {
		at = " at " + quoteSnippet(words[i].text)
	}
	return unwrapped{opaque: fmt.Sprintf("the gate cannot tell which command %s runs (unexpected word%s)", name, at)}
}

// skipAssigns skips NAME=value words and returns floors for risky names.
func skipAssigns(words []shellWord, i int) (int, []floor) {
	var floors []floor
	for ; i < len(words) && words[i].literal; i++ {
		name, _, ok := strings.Cut(words[i].text, "=")
		if !ok || name == "" {
			break
		}
		if riskyVar(name) {
			floors = append(floors, riskyVarFloor(name))
		}
	}
	return i, floors
}

// unwrapEnv handles env [options] [-] [NAME=value]... [CMD...].
func unwrapEnv(words []shellWord) (unwrapped, bool) {
	spec := optSpec{short: "i0v", shortArg: "uCS",
		long:    []string{"ignore-environment", "null", "debug", "list-signal-handling", "block-signal", "default-signal", "ignore-signal"},
		longArg: []string{"unset", "chdir", "split-string"}}
	i, vals, ok := spec.parseOpts(words, 1)
	if !ok {
		return opaqueWrapper("env", words, i), true
	}
	_, s := vals["S"]
	_, split := vals["split-string"]
	if s || split {
		return unwrapped{opaque: "env -S splits a string into a command, which the gate cannot check"}, true
	}
	if i < len(words) && words[i].literal && words[i].text == "-" {
		i++
	}
	i, floors := skipAssigns(words, i)
	if i >= len(words) {
		return unwrapped{}, false // env alone prints the environment
	}
	return unwrapped{inner: [][]shellWord{words[i:]}, floors: floors}, true
}

// unwrapXargs handles xargs [options] [CMD...], whose command gets
// arguments read at run time.
func unwrapXargs(words []shellWord) unwrapped {
	spec := optSpec{short: "0oprtx", shortArg: "adEILnPs", shortOpt: "eil",
		long: []string{"null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits",
			"eof", "replace", "max-lines"},
		longArg: []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}}
	i, vals, ok := spec.parseOpts(words, 1)
	if !ok {
		return opaqueWrapper("xargs", words, i)
	}
	inner := slices.Clone(words[i:])
	if len(inner) == 0 {
		inner = []shellWord{{text: "echo", literal: true}}
	}
	_, iOpt := vals["i"]
	_, bigI := vals["I"]
	_, replace := vals["replace"]
	if !iOpt && !bigI && !replace {
		// The arguments xargs reads are appended: an exact rule must not match.
		inner = append(inner, shellWord{text: "{xargs-input}", splits: true})
	}
	return unwrapped{inner: [][]shellWord{inner}, wrapperFloor: "xargs runs it with arguments read at run time"}
}

// unwrapFind handles the commands of find -exec, -execdir, -ok and -okdir.
func unwrapFind(words []shellWord) (unwrapped, bool) {
	var u unwrapped
	for _, w := range words {
		if w.splits {
			// find $args may hide an -exec: any word can start one.
			return unwrapped{opaque: fmt.Sprintf("find gets %s, which may expand to more arguments (an -exec) at run time", quoteSnippet(w.text))}, true
		}
	}
	for i := 1; i < len(words); i++ {
		switch words[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(words) && !(words[j].literal && (words[j].text == ";" || words[j].text == "+")) {
			j++
		}
		if j > i+1 {
			u.inner = append(u.inner, words[i+1:j])
		}
		i = j
	}
	if len(u.inner) == 0 {
		return unwrapped{}, false
	}
	u.wrapperFloor = "find -exec runs the command on every file it finds"
	return u, true
}

// shellCall says where a shell invocation (bash, sh, ...) gets its script.
type shellCall struct {
	withC  bool
	script int  // index of the -c script or the script file; -1 if none
	stdin  bool // the script comes from stdin: no -c and no file, or -s
	floors []floor
	opaque string
}

// parseShellCall reads the options of a shell invocation; it reports false
// when words do not run a shell.
func parseShellCall(words []shellWord) (shellCall, bool) {
	sc, i, withS := shellCall{script: -1}, 1, false
	switch path.Base(words[0].text) {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash":
	case "busybox":
		if len(words) < 2 || !words[1].literal || (words[1].text != "sh" && words[1].text != "ash") {
			return sc, false
		}
		i = 2
	default:
		return sc, false
	}
	startup := floor{reason: words[0].text + " reads startup files, which can run anything"}
	if b := path.Base(words[0].text); b != "bash" {
		// sh, dash and the others parse their string by other rules than
		// bash, which the gate reads: where the script uses what they read
		// differently (&>, [[ ]], arrays, ...), it asks.
		for _, w := range words[1:] {
			if w.literal && bashisms.MatchString(w.text) {
				sc.floors = append(sc.floors, floor{reason: b + " reads " + quoteSnippet(w.text) + " by other rules than bash, which the gate reads"})
				break
			}
		}
	}
	for ; i < len(words); i++ {
		t := words[i].text
		switch {
		case !words[i].literal && sc.withC:
		case !words[i].literal:
			sc.opaque = opaqueWrapper(words[0].text, words, i).opaque
			return sc, true
		case t == "--" || t == "-":
			i++
		case len(t) < 2 || (t[0] != '-' && t[0] != '+'):
		case t == "--rcfile" || t == "--init-file":
			i++
			sc.floors = append(sc.floors, startup)
			continue
		case t == "--login" || t == "--interactive":
			sc.floors = append(sc.floors, startup)
			continue
		case strings.HasPrefix(t, "--"):
			switch t {
			case "--norc", "--noprofile", "--posix", "--restricted", "--verbose", "--noediting", "--debugger":
				continue
			}
			sc.opaque = opaqueWrapper(words[0].text, words, i).opaque
			return sc, true
		default:
			i = sc.shortOptions(t, i, &withS, startup)
			continue
		}
		break
	}
	switch {
	case sc.withC:
		if i < len(words) {
			sc.script = i
		}
	case withS || i >= len(words):
		sc.stdin = true
	default:
		sc.script = i
	}
	return sc, true
}

// shortOptions reads one word of a shell's short options and returns the
// index of the last word it used.
func (sc *shellCall) shortOptions(t string, i int, withS *bool, startup floor) int {
	for _, c := range t[1:] {
		switch c {
		case 'c':
			sc.withC = true
		case 's':
			*withS = true
		case 'o', 'O':
			i++ // the option's name
		case 'i', 'l':
			sc.floors = append(sc.floors, startup)
		}
	}
	return i
}

// unwrapShellC handles bash -c SCRIPT and the like; a shell running a
// script file is an ordinary command, and one reading its script from stdin
// is checked where its stdin is known (a heredoc, a pipe).
func unwrapShellC(words []shellWord) (unwrapped, bool) {
	sc, ok := parseShellCall(words)
	switch {
	case !ok:
		return unwrapped{}, false
	case sc.opaque != "":
		return unwrapped{opaque: sc.opaque}, true
	case !sc.withC || sc.script < 0:
		return unwrapped{}, false
	}
	return unwrapped{script: &words[sc.script], floors: sc.floors}, true
}

// unwrapEval handles eval ARGS..., which runs its arguments joined by spaces.
func unwrapEval(words []shellWord) unwrapped {
	args := words[1:]
	if len(args) > 0 && args[0].literal && args[0].text == "--" {
		args = args[1:]
	}
	texts := make([]string, len(args))
	literal := true
	for i, w := range args {
		texts[i] = w.text
		literal = literal && w.literal
	}
	return unwrapped{script: &shellWord{text: strings.Join(texts, " "), literal: literal}}
}

// unwrapTrap handles trap SCRIPT SIGNAL..., which runs SCRIPT later.
func unwrapTrap(words []shellWord) (unwrapped, bool) {
	if len(words) < 3 {
		return unwrapped{}, false
	}
	arg := words[1]
	if arg.literal && (arg.text == "-" || arg.text == "" || strings.HasPrefix(arg.text, "-")) {
		return unwrapped{}, false
	}
	return unwrapped{script: &arg}, true
}

// unwrapSu handles su [options] [-] [user] with -c SCRIPT.
func unwrapSu(words []shellWord) (unwrapped, bool) {
	spec := optSpec{short: "flmpP", shortArg: "cgGsw",
		long:    []string{"login", "preserve-environment", "pty", "fast"},
		longArg: []string{"command", "session-command", "group", "supp-group", "shell", "whitelist-environment"}}
	i, vals, ok := spec.parseOpts(words, 1)
	if !ok {
		return opaqueWrapper("su", words, i), true
	}
	script, ok := vals["c"]
	if !ok {
		if script, ok = vals["command"]; !ok {
			return unwrapped{}, false
		}
	}
	return unwrapped{script: &script, wrapperFloor: "su runs the command as another user"}, true
}

// commandFloors returns floors for commands whose arguments decide how
// dangerous they are: builtins that set variables named by their arguments
// (read PATH, printf -v IFS, export LD_PRELOAD=...), and git config.
func commandFloors(words []shellWord) []floor {
	var floors []floor
	args := words[1:]
	switch words[0].text {
	case "git":
		return gitFloors(words)
	case "printf":
		if len(args) < 2 || args[0].text != "-v" {
			return nil
		}
		args = args[1:2]
	case "export", "declare", "typeset", "local", "readonly":
		for _, w := range args {
			if !w.literal {
				floors = append(floors, floor{reason: fmt.Sprintf("%s gets %s, which is only known at run time", words[0].text, quoteSnippet(w.text))})
			}
		}
	case "read", "mapfile", "readarray", "getopts":
	default:
		return nil
	}
	for _, w := range args {
		name, _, _ := strings.Cut(w.text, "=")
		name = strings.TrimSuffix(name, "+")
		if riskyVar(name) {
			floors = append(floors, riskyVarFloor(name))
		} else if !w.literal && words[0].text != "export" && words[0].text != "declare" {
			floors = append(floors, floor{reason: fmt.Sprintf("%s sets a variable named at run time", words[0].text)})
		}
	}
	return floors
}

// riskyVar reports whether setting the variable can change which program a
// command runs or make it run extra code.
func riskyVar(name string) bool {
	n := strings.ToUpper(name)
	for _, p := range []string{"LD_", "DYLD_", "GIT_", "BASH_FUNC_", "NPM_CONFIG_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	switch n {
	case "PATH", "IFS", "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "CDPATH",
		"HOME", "XDG_CONFIG_HOME", "NODE_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
		"PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "GOFLAGS", "GOTOOLCHAIN",
		"CC", "CXX", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "SSH_ASKPASS", "SUDO_ASKPASS", "GCONV_PATH":
		return true
	}
	return false
}

func riskyVarFloor(name string) floor {
	return floor{reason: fmt.Sprintf("it sets %s, which can change what the command runs", name)}
}

// gitFloors holds git config that writes configuration: .git/config can
// make git run commands (hooksPath, pagers, aliases), so it is protected
// like a write into .git.
func gitFloors(words []shellWord) []floor {
	i := 1
	for i < len(words) {
		w := words[i]
		if !w.literal {
			return []floor{{reason: fmt.Sprintf("the gate cannot tell which git subcommand %s runs", quoteSnippet(w.text)), always: true, liftable: true}}
		}
		switch t := w.text; {
		case t == "-C" || t == "-c" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--config-env":
			i += 2
		case strings.HasPrefix(t, "-"):
			i++
		case t == "config" && !gitConfigReads(words[i+1:]):
			return []floor{{reason: "git config writes git's configuration, which can make git run commands; decode protects .git/", always: true, liftable: true}}
		default:
			return nil
		}
	}
	return nil
}

// gitConfigReads reports whether git config with these arguments only reads.
func gitConfigReads(args []shellWord) bool {
	operands, reads := 0, false
	for _, a := range args {
		switch a.text {
		case "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit",
			"set", "unset", "rename-section", "remove-section", "edit":
			return false
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list", "get", "list":
			reads = true
		}
		if !strings.HasPrefix(a.text, "-") {
			operands++
		}
	}
	return reads || operands <= 1
}
