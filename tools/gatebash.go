package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
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
	for _, w := range an.writes {
		v = stricter(v, g.checkRedirect(w))
	}
	for i := range an.cmds {
		v = stricter(v, g.checkUnit(&an.cmds[i]))
	}
	what := "the bash command " + quoteSnippet(*a.Command)
	if f := g.activeFloor(an.floors); f != nil {
		v = stricter(v, g.floorVerdict(what, *f))
	}
	return v
}

// checkUnit decides one command of a line.
func (g *Gate) checkUnit(u *cmdUnit) Verdict {
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
	allowed := firstRule(g.allow, "bash", func(r *rule) bool { return r.matchCommand(u.words, joined) })
	floors := u.floors
	if allowed != nil {
		floors = liftFloors(floors, allowed)
	} else if u.wrapperFloor != "" {
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

// checkRedirect decides a redirection that writes to a file.
func (g *Gate) checkRedirect(w writeUnit) Verdict {
	t := w.target
	what := "the bash command's write to " + quoteSnippet(t.text)
	if t.literal {
		return g.checkWrite("write", g.resolve(t.text), what, true)
	}
	if dir := mentionsProtected(t.text, g.protected); dir != "" {
		return deny(protectedReason(t.text, dir), "")
	}
	switch g.mode {
	case ModeBypass:
		return allow("")
	case ModePlan:
		return deny(planReason(what), "")
	}
	return ask(fmt.Sprintf("%s needs the user's approval: the file name is only known at run time", what), "")
}
