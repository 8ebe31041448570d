package tools

import (
	"path"
	"slices"
	"strings"
)

// writeOpts lists, for a command that writes files named by its arguments,
// the short and long options that take a value: the parser must skip those
// values to find the operands.
type writeOpts struct {
	shortArg string
	longArg  []string
}

// fileWriters are the commands whose operands (or some options' values)
// name files they create, change or remove. A command not listed here can
// still write anywhere; these are the ones whose targets the gate can read
// off the command line, so a target in a protected directory is denied in
// every mode, as a redirection there is.
var fileWriters = map[string]writeOpts{
	"tee":      {},
	"rm":       {},
	"rmdir":    {},
	"unlink":   {},
	"shred":    {shortArg: "ns", longArg: []string{"iterations", "size", "random-source"}},
	"touch":    {shortArg: "drt", longArg: []string{"date", "reference"}},
	"mkdir":    {shortArg: "m", longArg: []string{"mode", "context"}},
	"truncate": {shortArg: "rs", longArg: []string{"reference", "size"}},
	"chmod":    {longArg: []string{"reference"}},
	"chown":    {longArg: []string{"reference", "from"}},
	"chgrp":    {longArg: []string{"reference"}},
	"mv":       {shortArg: "St", longArg: []string{"suffix", "target-directory"}},
	"ln":       {shortArg: "St", longArg: []string{"suffix", "target-directory"}},
	"cp":       {shortArg: "St", longArg: []string{"suffix", "target-directory"}},
	"install":  {shortArg: "gmoStZ", longArg: []string{"group", "mode", "owner", "suffix", "target-directory", "context"}},
	"sort": {shortArg: "kotST", longArg: []string{"key", "output", "field-separator", "buffer-size",
		"temporary-directory", "files0-from", "batch-size", "compress-program", "parallel", "random-source"}},
	"dd": {},
}

// noteWrites records the files a command writes through its arguments and
// the directories it changes to.
func (a *shellAnalyzer) noteWrites(words []shellWord) {
	name := path.Base(words[0].text)
	for _, w := range words[1:] {
		a.noteDotglob(w.text)
	}
	if name == "cd" || name == "pushd" {
		a.out.cds = append(a.out.cds, cdTarget(words[1:]))
		return
	}
	for _, t := range commandWrites(name, words[1:]) {
		// tee >(grep x) feeds a command, checked on its own; tee /dev/stderr
		// writes no file.
		if !t.procSubst && !(t.literal && harmlessDevice(t.text)) {
			a.out.writes = append(a.out.writes, writeUnit{target: t, cmd: words})
		}
	}
}

// noteDotglob notes, once, a line or word that may turn on dotglob (shopt
// -s dotglob, bash -O dotglob, GLOBIGNORE=...): globs then match names
// starting with a dot, .git among them, which the gate cannot follow.
func (a *shellAnalyzer) noteDotglob(text string) {
	if a.out.dotglob || !strings.Contains(text, "dotglob") && !strings.Contains(text, "GLOBIGNORE") {
		return
	}
	a.out.dotglob = true
	a.out.floors = append(a.out.floors, floor{
		reason: "it may turn on dotglob (or set GLOBIGNORE), under which globs match .git and .decode",
		always: true,
	})
}

// commandWrites returns the files the command name writes, given its
// arguments, or nil when it is not a known file writer.
func commandWrites(name string, args []shellWord) []shellWord {
	spec, ok := fileWriters[name]
	if !ok {
		return nil
	}
	ops, vals := splitOperands(args, spec)
	switch name {
	case "sort":
		return append(vals["o"], append(vals["output"], append(vals["T"], vals["temporary-directory"]...)...)...)
	case "dd":
		var out []shellWord
		for _, w := range ops {
			if f, ok := strings.CutPrefix(w.text, "of="); ok {
				w.text = f
				out = append(out, w)
			}
		}
		return out
	case "cp", "install":
		if dirs := append(vals["t"], vals["target-directory"]...); len(dirs) > 0 {
			return dirs
		}
		if _, d := vals["d"]; d && name == "install" || len(ops) == 1 {
			return ops // install -d DIR...; cp with one operand fails, but check it
		}
		if len(ops) > 1 {
			return ops[len(ops)-1:]
		}
		return nil
	}
	// mv and ln also change what their sources name: every operand counts.
	return append(ops, append(vals["t"], vals["target-directory"]...)...)
}

// splitOperands separates a command's arguments into operands and the
// values of options that take one (by option name, without dashes; an
// option with no value maps to an empty list). A word the gate cannot see
// is an operand: it may name any file.
func splitOperands(args []shellWord, spec writeOpts) ([]shellWord, map[string][]shellWord) {
	var ops []shellWord
	vals := map[string][]shellWord{}
	for i := 0; i < len(args); i++ {
		w := args[i]
		t := w.text
		switch {
		case !w.literal || len(t) < 2 || t[0] != '-':
			ops = append(ops, w)
		case t == "--":
			return append(ops, args[i+1:]...), vals
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t[2:], "=")
			switch {
			case hasVal:
				vals[name] = append(vals[name], shellWord{text: val, literal: true})
			case slices.Contains(spec.longArg, name) && i+1 < len(args):
				i++
				vals[name] = append(vals[name], args[i])
			default:
				vals[name] = vals[name][:0:0]
			}
		default:
			i = shortOptions(args, i, spec.shortArg, vals)
		}
	}
	return ops, vals
}

// shortOptions reads the cluster of short options args[i] (-pt DIR,
// -oFILE) into vals and returns the index of the last word it used.
func shortOptions(args []shellWord, i int, shortArg string, vals map[string][]shellWord) int {
	t := args[i].text
	for j := 1; j < len(t); j++ {
		c := string(t[j])
		if !strings.Contains(shortArg, c) {
			vals[c] = vals[c][:0:0]
			continue
		}
		if j+1 < len(t) {
			vals[c] = append(vals[c], shellWord{text: t[j+1:], literal: true})
		} else if i+1 < len(args) {
			i++
			vals[c] = append(vals[c], args[i])
		}
		break
	}
	return i
}

// cdTarget returns the directory cd or pushd changes to, as a word that is
// not literal when it is only known at run time (cd alone goes home, cd -
// back to $OLDPWD, pushd +N around the stack).
func cdTarget(args []shellWord) shellWord {
	for i, w := range args {
		switch {
		case w.literal && w.text == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
		case w.literal && (w.text == "-" || strings.HasPrefix(w.text, "+")):
			return shellWord{text: w.text}
		case w.literal && strings.HasPrefix(w.text, "-") && len(w.text) > 1:
			continue // -L, -P, -e, -@
		default:
			return w
		}
	}
	return shellWord{text: "~"}
}

// globMayName returns the protected directory a glob in text may match,
// or "". Without dotglob a wildcard never matches a leading dot, so only a
// part of the pattern that spells the dot can match .git: .g?t, .[g]it,
// [.]git or an extglob with a dot in it.
func globMayName(lower string, protected [][]string) string {
	if !strings.ContainsAny(lower, "*?[(") {
		return ""
	}
	comps := strings.Split(lower, "/")
	for _, p := range protected {
		for i := 0; i+len(p) <= len(comps); i++ {
			match := true
			for j, name := range p {
				match = match && compMayMatch(comps[i+j], strings.ToLower(name))
			}
			if match {
				return strings.Join(p, "/")
			}
		}
	}
	return ""
}

// compMayMatch reports whether one component of a path, possibly a glob,
// may match name.
func compMayMatch(comp, name string) bool {
	if comp == name {
		return true
	}
	if !strings.ContainsAny(comp, "*?[(") {
		return false
	}
	if strings.HasPrefix(name, ".") && !strings.Contains(comp, ".") {
		return false
	}
	for _, open := range []string{"?(", "*(", "+(", "@(", "!("} {
		if strings.Contains(comp, open) {
			return true // an extglob: do not try to be clever
		}
	}
	ok, err := path.Match(comp, name)
	return ok || err != nil
}
