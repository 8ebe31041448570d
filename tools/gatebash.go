package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// checkBash decides a bash call. Every command of the line, including those
// in substitutions, function bodies and strings run by bash -c or eval, must
// be allowed on its own; the line gets the most restrictive verdict of its
// parts, however many there are.
func (g *Gate) checkBash(args json.RawMessage) (v Verdict) {
	defer func() {
		// A gate that panics must not take the loop down, nor let the call through.
		if p := recover(); p != nil {
			v = deny(fmt.Sprintf("the gate failed while checking this command (%v); rewrite it more simply", p), "")
		}
	}()
	var a struct {
		Command *string `json:"command"`
		Sandbox string  `json:"sandbox"`
		Reason  string  `json:"reason"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return invalidArgs("bash", err)
	}
	if a.Command == nil {
		return invalidArgs("bash", errors.New("command is missing"))
	}
	an := analyzeShell(*a.Command, g.protected)
	if an.err != nil {
		return deny(fmt.Sprintf("the bash command could not be parsed (%v), so the gate cannot check it; fix its syntax and try again", an.err), "")
	}
	v = allow("")
	// Writes first: on a tie, a write into a protected directory is the
	// more useful reason.
	dirs, dirsKnown := g.shellDirs(an.cds)
	for _, w := range an.writes {
		v = stricter(v, g.checkRedirect(w, dirs, dirsKnown))
	}
	reader := g.workspaceReader(an, dirs, dirsKnown)
	for i := range an.cmds {
		v = stricter(v, g.checkUnit(&an.cmds[i], reader))
	}
	what := "the bash command " + quoteSnippet(*a.Command)
	if g.sandboxed && g.mode == ModeDefault && v.Decision == Allow {
		v = g.askRedirects(v, what, an.writes, dirs, dirsKnown)
	}
	if f := g.activeFloor(an.floors); f != nil {
		v = stricter(v, g.floorVerdict(what, *f))
	}
	if g.sandboxed && a.Sandbox == "escalate" {
		// No rule and no mode lets a command out of the sandbox: a person
		// decides, every time.
		reason := strings.TrimSpace(a.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		esc := fmt.Sprintf("%s asks to run outside the sandbox (network, writes outside the workspace): %s", what, quoteSnippet(reason))
		if g.mode == ModePlan {
			return stricter(v, deny("plan mode: "+esc+"; describe it as a step of the plan instead", ""))
		}
		if v.Decision != Deny {
			v = ask(esc, "")
		}
	}
	return v
}

// BashAccess says how far a bash call the gate let through may reach in
// the sandbox: in default mode a line that ran without asking because it
// looks read-only gets the workspace read-only, and one an allow rule
// covers or a person approved gets it writable; edit mode writes the
// workspace, plan mode only reads, bypass is unconfined.
func (g *Gate) BashAccess(args json.RawMessage) Access {
	switch g.mode {
	case ModeBypass:
		return AccessFull
	case ModeEdit:
		return AccessWrite
	case ModePlan:
		return AccessRead
	}
	if v := g.checkBash(args); v.Decision == Allow && v.Rule == "" {
		return AccessRead
	}
	return AccessWrite
}

// checkUnit decides one command of a line. reader, when not nil, vouches
// for commands that only read the workspace (edit mode with no sandbox).
func (g *Gate) checkUnit(u *cmdUnit, reader *workspaceReader) Verdict {
	joined := joinWords(u.words)
	what := "bash command " + quoteSnippet(joined)
	// Deny and ask rules also match a command run by path: /bin/rm is rm.
	byName, byNameJoined := u.words, joined
	if w0 := u.words[0]; w0.literal && strings.Contains(w0.text, "/") {
		byName = slices.Clone(u.words)
		byName[0].text = path.Base(w0.text)
		byNameJoined = joinWords(byName)
	}
	either := func(r *rule) bool { return r.matchCommand(u.words, joined) || r.matchCommand(byName, byNameJoined) }
	if r := firstRule(g.deny, "bash", either); r != nil {
		return deny(fmt.Sprintf("%s is denied by the rule %s; do not run it or a variant of it: ask the user, or do the task another way", what, r.text), r.text)
	}
	if r := firstRule(g.ask, "bash", either); r != nil {
		return ask(fmt.Sprintf("%s matches the rule %s, which asks for approval", what, r.text), r.text)
	}
	allowed := firstRule(g.allowRules(), "bash", func(r *rule) bool { return r.matchCommand(u.words, joined) })
	floors := u.floors
	if allowed != nil {
		floors = liftFloors(floors, allowed)
	} else if u.wrapperFloor != "" && !(g.sandboxed && strings.HasPrefix(u.wrapperFloor, "xargs ")) {
		// xargs adds arguments at run time; in the sandbox the command it
		// runs is held where the mode puts it, so only that command counts.
		floors = append(slices.Clip(floors), floor{reason: u.wrapperFloor})
	}
	if f := g.activeFloor(floors); f != nil {
		return g.floorVerdict(what, *f)
	}
	switch {
	case allowed != nil:
		return allow(allowed.text)
	case u.kind != unitCommand:
		return allow("") // a wrapper or builtin: what it runs is checked on its own
	case g.sandboxed && g.mode == ModeEdit:
		return allow("") // the sandbox holds it to the workspace
	case g.sandboxed && g.mode == ModeDefault && looksReadOnly(u.words):
		return allow("") // the sandbox holds the workspace read-only for it
	case reader != nil && reader.onlyReads(u.words):
		return allow("") // it reads files of the workspace and prints
	}
	return g.modeDefault(false, what)
}

// liftFloors drops the floors an allow rule matching the command lifts:
// liftable ones, and those about a protected directory the rule names.
func liftFloors(floors []floor, r *rule) []floor {
	var out []floor
	for _, f := range floors {
		if !f.liftable && (f.protected == "" || !r.names(f.protected)) {
			out = append(out, f)
		}
	}
	return out
}

// activeFloor returns the first floor that holds in the gate's mode.
func (g *Gate) activeFloor(floors []floor) *floor {
	for i, f := range floors {
		if g.sandboxed && (f.protected != "" || (f.contained && g.mode == ModeEdit)) {
			// the sandbox holds the protected paths read-only in every mode,
			// and in edit mode what a command writes to the workspace
			continue
		}
		if g.mode != ModeBypass || f.always || (f.hides && g.guarded) {
			return &floors[i]
		}
	}
	return nil
}

// floorVerdict is the verdict for a command that no rule can allow
// outright: ask, or deny in plan mode, where nobody is asked.
func (g *Gate) floorVerdict(what string, f floor) Verdict {
	if g.mode == ModePlan {
		return deny(fmt.Sprintf("plan mode: %s cannot run without the user's approval, because %s; describe it as a step of the plan instead", what, f.reason), "")
	}
	return ask(fmt.Sprintf("%s needs the user's approval: %s", what, f.reason), "")
}

// shellDirs returns the directories a relative path in a command line may
// be relative to: where the bash tool will start it, then each directory
// the line changes to, in order (a path after cd sub may be in sub). It
// reports false when the line changes to a directory known only at run
// time, where a relative path could point anywhere.
func (g *Gate) shellDirs(cds []shellWord) ([]string, bool) {
	cur := g.root
	if g.bashDir != nil {
		if d := g.bashDir(); filepath.IsAbs(d) {
			cur = filepath.Clean(d)
		}
	}
	dirs := []string{cur}
	for _, c := range cds {
		if !c.literal {
			return dirs, false
		}
		cur = filepath.Join(cur, filepath.FromSlash(c.text))
		if filepath.IsAbs(c.text) {
			cur = filepath.Clean(c.text)
		}
		if !slices.Contains(dirs, cur) {
			dirs = append(dirs, cur)
		}
	}
	return dirs, true
}

// checkRedirect decides a write to a file by a redirection or by a
// command's argument (tee FILE, cp x FILE). A relative target is checked
// against each directory the line may run it in.
func (g *Gate) checkRedirect(w writeUnit, dirs []string, dirsKnown bool) Verdict {
	t := w.target
	what := "the bash command's write to " + quoteSnippet(t.text)
	if w.cmd != nil {
		what = "the write to " + quoteSnippet(t.text) + " by " + quoteSnippet(joinWords(w.cmd))
	}
	if t.literal && (dirsKnown || filepath.IsAbs(t.text)) {
		v := allow("")
		for _, d := range dirs {
			gp := g.resolveFrom(d, t.text)
			if r := g.bashRuleNaming(w.cmd, gp.protected); r != nil && g.firstWriteDeny(gp) == nil {
				v = stricter(v, allow(r.text)) // an allow rule for this command names the directory
				continue
			}
			v = stricter(v, g.checkWrite("write", gp, what, true))
			if filepath.IsAbs(t.text) {
				break
			}
		}
		return v
	}
	if dir := mentionsProtected(t.text, g.protected); dir != "" {
		if r := g.bashRuleNaming(w.cmd, dir); r == nil {
			return deny(protectedReason(t.text, dir), "")
		}
	}
	if g.sandboxed && (tempTarget(t) || (!t.literal && g.mode == ModeEdit)) {
		return allow("") // the sandbox keeps TMPDIR private, and edit mode's writes to the workspace
	}
	if t.literal {
		// A relative path after cd to a place known only at run time may
		// land in .git, whatever the mode.
		return g.floorVerdict(what, floor{reason: "the line changes to a directory known only at run time, so the gate cannot tell where it points"})
	}
	switch g.mode {
	case ModeBypass:
		return allow("")
	case ModePlan:
		return deny(planReason(what), "")
	}
	return ask(fmt.Sprintf("%s needs the user's approval: the file name is only known at run time", what), "")
}

// bashRuleNaming returns the bash allow rule that matches cmd and names the
// protected directory dir, which lifts the protection for what cmd writes.
func (g *Gate) bashRuleNaming(cmd []shellWord, dir string) *rule {
	if cmd == nil || dir == "" {
		return nil
	}
	joined := joinWords(cmd)
	return firstRule(g.allowRules(), "bash", func(r *rule) bool { return r.kind != ruleAny && r.matchCommand(cmd, joined) && r.names(dir) })
}

// firstWriteDeny returns the deny rule for file writes that matches gp.
func (g *Gate) firstWriteDeny(gp gatePath) *rule {
	return firstRule(g.deny, "write", func(r *rule) bool { return r.kind != ruleAny && gp.matches(r) })
}

// askRedirects asks, in default mode with the sandbox, about a line that
// writes files by redirection: an allow rule for the command does not
// cover where its output goes (bash(echo *) is not echo x >> file), only a
// file-write rule naming the target does. A line allowed without a rule
// would otherwise run with the workspace read-only, where the write fails.
func (g *Gate) askRedirects(v Verdict, what string, writes []writeUnit, dirs []string, dirsKnown bool) Verdict {
	for _, w := range writes {
		if w.cmd != nil && v.Rule != "" {
			continue // a command's own argument (cp x FILE): its rule covers it
		}
		if tempTarget(w.target) {
			continue // the command's private temp dir, writable in every mode
		}
		if r := g.checkRedirect(w, dirs, dirsKnown); r.Decision == Allow && r.Rule == "" {
			return ask(fmt.Sprintf("%s writes to %s and needs the user's approval", what, quoteSnippet(w.target.text)), "")
		}
	}
	return v
}

// tempTarget reports a write target under $TMPDIR, the command's own
// temp dir in the sandbox.
func tempTarget(t shellWord) bool {
	return !t.literal && (strings.HasPrefix(t.text, "$TMPDIR/") || strings.HasPrefix(t.text, "${TMPDIR}/"))
}
