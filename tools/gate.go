package tools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Mode is the gate's permission mode.
type Mode string

// The permission modes.
const (
	// ModeDefault allows read-only tools and asks for everything else.
	// web_fetch, read-only but sending a request out, asks in every mode
	// but bypass unless a web_fetch(domain:...) rule allows its host.
	ModeDefault Mode = "default"
	// ModePlan allows only read-only tools; everything else is denied.
	ModePlan Mode = "plan"
	// ModeEdit also allows file edits inside the workspace; bash still asks.
	ModeEdit Mode = "edit"
	// ModeBypass allows everything except writes into protected directories.
	ModeBypass Mode = "bypass"
)

// ParseMode parses a mode name; the empty string is the default mode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeDefault, nil
	case ModeDefault, ModePlan, ModeEdit, ModeBypass:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want default, plan, edit or bypass)", s)
}

// GateConfig configures a Gate.
type GateConfig struct {
	Mode             Mode
	Allow, Ask, Deny []string
	// Root is the workspace root, an absolute path; relative paths in tool
	// arguments and path rules are relative to it.
	Root string
	// ExtraRoots are more directories of the workspace (--add-dir), as
	// absolute paths: edits there count as inside the workspace, as under
	// Root. Path rules still match relative to Root (or absolute patterns).
	ExtraRoots []string
	// BashDir, when set, returns the bash tool's working directory, which
	// it keeps between calls: relative paths in a command are resolved
	// from there. Root is used when it is nil or returns "".
	BashDir func() string
	// ProtectedDirs are directories (relative, matched anywhere in a path)
	// that no mode may write to unless an allow rule names them. .git and
	// .decode are always protected.
	ProtectedDirs []string
	// Sandboxed says bash commands run in the operating system's sandbox:
	// edit mode then runs them without asking, default mode runs those that
	// look read-only without asking (with the workspace read-only), and a
	// call may ask to escalate out of the sandbox, which always asks.
	Sandboxed bool
}

// Gate decides whether a tool call may run: allow, ask the user, or deny.
// It is safe for concurrent use.
type Gate struct {
	// cfg is what the gate was made from (AllowsWith makes another).
	cfg  GateConfig
	mode Mode
	// allowMu guards allow, which AddAllow extends while a run goes on
	// (a person's "always"); read it through allowRules.
	allowMu          sync.RWMutex
	allow, ask, deny []rule
	root, realRoot   string
	extra, realExtra []string // ExtraRoots, cleaned and with symlinks resolved
	bashDir          func() string
	protected        [][]string
	// guarded says deny or ask rules exist for bash, so commands the gate
	// cannot see need approval even in bypass mode.
	guarded bool
	// sandboxed: see GateConfig.Sandboxed.
	sandboxed bool
}

// fileEditTools are the tools that change files, which edit mode allows
// inside the workspace.
var fileEditTools = map[string]bool{"write": true, "edit": true, "multi_edit": true}

// NewGate checks the configuration and returns the gate; an invalid rule is
// an error naming it.
func NewGate(c GateConfig) (*Gate, error) {
	mode, err := ParseMode(string(c.Mode))
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if !filepath.IsAbs(c.Root) {
		return nil, fmt.Errorf("gate: workspace root %q is not an absolute path", c.Root)
	}
	g := &Gate{cfg: c, mode: mode, root: filepath.Clean(c.Root), bashDir: c.BashDir, sandboxed: c.Sandboxed}
	g.realRoot = g.root
	if real, err := filepath.EvalSymlinks(g.root); err == nil {
		g.realRoot = real
	}
	for _, d := range c.ExtraRoots {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("gate: extra workspace root %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		real := d
		if r, err := filepath.EvalSymlinks(d); err == nil {
			real = r
		}
		g.extra, g.realExtra = append(g.extra, d), append(g.realExtra, real)
	}
	for _, list := range []struct {
		in  []string
		out *[]rule
	}{{c.Allow, &g.allow}, {c.Ask, &g.ask}, {c.Deny, &g.deny}} {
		for _, s := range list.in {
			r, err := parseRule(s)
			if err != nil {
				return nil, fmt.Errorf("gate: %w", err)
			}
			*list.out = append(*list.out, r)
		}
	}
	for _, r := range append(slices.Clip(g.deny), g.ask...) {
		g.guarded = g.guarded || r.covers("bash")
	}
	seen := map[string]bool{}
	for _, d := range append([]string{".git", ".decode"}, c.ProtectedDirs...) {
		clean := path.Clean(strings.ReplaceAll(d, "\\", "/"))
		if d == "" || strings.HasPrefix(clean, "/") || clean == "." || strings.HasPrefix(clean, "..") {
			return nil, fmt.Errorf("gate: protected directory %q must be a relative path inside the workspace", d)
		}
		if key := strings.ToLower(clean); !seen[key] {
			seen[key] = true
			g.protected = append(g.protected, strings.Split(clean, "/"))
		}
	}
	return g, nil
}

// AddAllow adds an allow rule for the rest of the gate's life: a person
// allowed calls like one it asked about "always".
func (g *Gate) AddAllow(text string) error {
	r, err := parseRule(text)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	g.allowMu.Lock()
	defer g.allowMu.Unlock()
	g.allow = append(slices.Clip(g.allow), r)
	return nil
}

// AllowsWith reports whether the call would be allowed with one more
// allow rule: whether a person's "always" for it would let calls like it
// through, or asking would go on (an ask rule, a protected path, a command
// no rule can vouch for).
func (g *Gate) AllowsWith(rule, name string, readOnly bool, args json.RawMessage) bool {
	c := g.cfg
	c.Allow = nil
	for _, r := range g.allowRules() {
		c.Allow = append(c.Allow, r.text)
	}
	c.Allow = append(c.Allow, rule)
	with, err := NewGate(c)
	return err == nil && with.Check(name, readOnly, args).Decision == Allow
}

// allowRules returns the allow rules; the slice is never changed in place.
func (g *Gate) allowRules() []rule {
	g.allowMu.RLock()
	defer g.allowMu.RUnlock()
	return g.allow
}

// Mode returns the gate's mode.
func (g *Gate) Mode() Mode { return g.mode }

// Check decides whether the call of tool name with args may run. readOnly
// is the tool's own declaration; bash and the file-edit tools are never
// treated as read-only.
func (g *Gate) Check(name string, readOnly bool, args json.RawMessage) Verdict {
	switch {
	case name == "bash":
		return g.checkBash(args)
	case fileEditTools[name]:
		return g.checkFileEdit(name, args)
	case pathRuleTools[name]:
		return g.checkFileRead(name, readOnly, args)
	case name == "web_fetch":
		return g.checkFetch(args)
	case strings.HasPrefix(name, "mcp__"):
		return g.checkMCP(name, readOnly, args)
	}
	return g.checkOther(name, readOnly, args)
}

// allow, ask and deny build verdicts.
func allow(rule string) Verdict        { return Verdict{Decision: Allow, Rule: rule} }
func ask(reason, rule string) Verdict  { return Verdict{Decision: Ask, Reason: reason, Rule: rule} }
func deny(reason, rule string) Verdict { return Verdict{Decision: Deny, Reason: reason, Rule: rule} }

// rank orders decisions from the least to the most restrictive; an unknown
// decision counts as a denial.
func rank(d Decision) int {
	switch d {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2
}

func invalidArgs(tool string, err error) Verdict {
	return deny(fmt.Sprintf("invalid arguments for %s: %v; fix them and call it again", tool, err), "")
}

// stricter returns the more restrictive of two verdicts. On a tie it keeps
// the first, unless only the second names a rule: a denial by a rule says
// more to the model than a mode default.
func stricter(a, b Verdict) Verdict {
	if rank(b.Decision) > rank(a.Decision) || (rank(b.Decision) == rank(a.Decision) && a.Rule == "" && b.Rule != "") {
		return b
	}
	return a
}

// firstRule returns the first rule of list that covers tool and matches.
func firstRule(list []rule, tool string, match func(*rule) bool) *rule {
	for i := range list {
		if list[i].covers(tool) && match(&list[i]) {
			return &list[i]
		}
	}
	return nil
}

// modeDefault is the verdict when no rule matched a call.
func (g *Gate) modeDefault(readOnly bool, what string) Verdict {
	switch {
	case readOnly || g.mode == ModeBypass:
		return allow("")
	case g.mode == ModePlan:
		return deny(planReason(what), "")
	}
	return ask(fmt.Sprintf("%s is not covered by an allow rule and needs the user's approval", what), "")
}

func planReason(what string) string {
	return fmt.Sprintf("plan mode allows only read-only tools and commands the rules allow, so %s cannot run; describe it as a step of the plan instead", what)
}

// checkOther handles tools the gate has no special knowledge of.
func (g *Gate) checkOther(name string, readOnly bool, args json.RawMessage) Verdict {
	what := "tool " + name
	if !readOnly {
		if p, ok := optionalPath(args); ok {
			gp := g.resolve(p)
			if dir := gp.protected; dir != "" && firstRule(g.allowRules(), name, func(r *rule) bool { return r.names(dir) }) == nil {
				return deny(protectedReason(gp.raw, dir), "")
			}
		}
	}
	whole := func(r *rule) bool { return r.kind == ruleAny }
	if r := firstRule(g.deny, name, whole); r != nil {
		return deny(fmt.Sprintf("%s is denied by the rule %s; do not call it again", what, r.text), r.text)
	}
	if r := firstRule(g.ask, name, whole); r != nil {
		return ask(fmt.Sprintf("%s matches the rule %s, which asks for approval", what, r.text), r.text)
	}
	if r := firstRule(g.allowRules(), name, whole); r != nil {
		return allow(r.text)
	}
	return g.modeDefault(readOnly, what)
}

// checkMCP decides a call of an MCP server's tool. Such a tool asks in
// default and edit mode unless a rule allows it, and never runs in plan
// mode, rule or not, unless the user's own config marks its server
// read-only (which readOnly then says).
func (g *Gate) checkMCP(name string, readOnly bool, args json.RawMessage) Verdict {
	if g.mode == ModePlan && !readOnly {
		if r := firstRule(g.deny, name, func(r *rule) bool { return true }); r != nil {
			return deny(fmt.Sprintf("tool %s is denied by the rule %s; do not call it again", name, r.text), r.text)
		}
		return deny(fmt.Sprintf("plan mode runs MCP tools only from servers the user's config marks read_only, so %s cannot run; describe it as a step of the plan instead", name), "")
	}
	return g.checkOther(name, readOnly, args)
}

// checkFetch matches web_fetch rules against the host of the URL.
func (g *Gate) checkFetch(args json.RawMessage) Verdict {
	var a struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return invalidArgs("web_fetch", err)
	}
	// A URL the gate cannot place is denied, not asked about: a deny rule
	// cannot match it, and the tool must never fetch a host the gate did
	// not see.
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return invalidArgs("web_fetch", fmt.Errorf("%s is not an absolute http(s) URL", quoteSnippet(a.URL)))
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	what := "web_fetch of " + quoteSnippet(a.URL)
	match := func(r *rule) bool { return r.matchHost(host) }
	if r := firstRule(g.deny, "web_fetch", match); r != nil {
		return deny(fmt.Sprintf("%s is denied by the rule %s; do not fetch from that site", what, r.text), r.text)
	}
	if r := firstRule(g.ask, "web_fetch", match); r != nil {
		return ask(fmt.Sprintf("%s matches the rule %s, which asks for approval", what, r.text), r.text)
	}
	if r := firstRule(g.allowRules(), "web_fetch", match); r != nil {
		return allow(r.text)
	}
	// web_fetch changes nothing here, but its request carries the URL (and
	// whatever the model put in it) out of the machine: read-only or not,
	// only bypass mode or a rule lets it go without asking. Plan mode asks
	// too, as reading documentation is part of planning.
	if g.mode == ModeBypass {
		return allow("")
	}
	return ask(fmt.Sprintf("%s sends a request out of this machine; no web_fetch(domain:...) rule allows the host %s", what, quoteSnippet(host)), "")
}

// checkFileRead matches read rules against the path of read, glob and grep.
func (g *Gate) checkFileRead(tool string, readOnly bool, args json.RawMessage) Verdict {
	p, ok := optionalPath(args)
	if !ok && tool != "read" {
		p, ok = ".", true // glob and grep search the root by default
	}
	var gp gatePath
	if ok {
		gp = g.resolve(p)
	}
	what := fmt.Sprintf("%s of %s", tool, quoteSnippet(p))
	match := func(r *rule) bool { return r.kind == ruleAny || (ok && gp.matches(r)) }
	if r := firstRule(g.deny, tool, match); r != nil {
		return deny(fmt.Sprintf("%s is denied by the rule %s; do not read it", what, r.text), r.text)
	}
	if r := firstRule(g.ask, tool, match); r != nil {
		return ask(fmt.Sprintf("%s matches the rule %s, which asks for approval", what, r.text), r.text)
	}
	if r := firstRule(g.allowRules(), tool, func(r *rule) bool { return r.kind == ruleAny || (ok && gp.allowedBy(r)) }); r != nil {
		return allow(r.text)
	}
	return g.modeDefault(readOnly, what)
}

// checkFileEdit handles write, edit and multi_edit.
func (g *Gate) checkFileEdit(tool string, args json.RawMessage) Verdict {
	var a struct {
		Path     *string `json:"path"`
		FilePath *string `json:"file_path"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return invalidArgs(tool, err)
	}
	if a.Path == nil {
		a.Path = a.FilePath
	}
	if a.Path == nil || strings.TrimSpace(*a.Path) == "" {
		return invalidArgs(tool, fmt.Errorf("path is missing"))
	}
	gp := g.resolve(*a.Path)
	return g.checkWrite(tool, gp, fmt.Sprintf("%s of %s", tool, quoteSnippet(*a.Path)), false)
}

// checkWrite decides a write to gp by tool, or by a shell redirection
// (redirect), which edit and default mode leave to the command's own verdict
// when it stays inside the workspace.
func (g *Gate) checkWrite(tool string, gp gatePath, what string, redirect bool) Verdict {
	specific := func(r *rule) bool { return !redirect || r.kind != ruleAny }
	if r := firstRule(g.deny, tool, func(r *rule) bool { return specific(r) && gp.matches(r) }); r != nil {
		return deny(fmt.Sprintf("%s is denied by the rule %s; do not write there", what, r.text), r.text)
	}
	if dir := gp.protected; dir != "" {
		named := firstRule(g.allowRules(), tool, func(r *rule) bool { return r.names(dir) && gp.allowedBy(r) })
		if named == nil {
			return deny(protectedReason(gp.raw, dir), "")
		}
	}
	if r := firstRule(g.ask, tool, func(r *rule) bool { return specific(r) && gp.matches(r) }); r != nil {
		return ask(fmt.Sprintf("%s matches the rule %s, which asks for approval", what, r.text), r.text)
	}
	if r := firstRule(g.allowRules(), tool, func(r *rule) bool { return specific(r) && gp.allowedBy(r) }); r != nil {
		return allow(r.text)
	}
	switch {
	case g.mode == ModeBypass:
		return allow("")
	case g.mode == ModePlan:
		return deny(planReason(what), "")
	case !gp.allowable():
		return ask(fmt.Sprintf("%s is outside the workspace (%s) and needs the user's approval", what, g.root), "")
	case g.mode == ModeEdit || redirect:
		return allow("")
	}
	return ask(fmt.Sprintf("%s needs the user's approval", what), "")
}

func protectedReason(p, dir string) string {
	return fmt.Sprintf("writing to %s is not allowed: %s/ is protected in every mode (an allow rule that names %s lifts this); do not try another way to write there", quoteSnippet(p), dir, dir)
}

// optionalPath returns the string path argument (path or file_path) of a
// tool's arguments, if any.
func optionalPath(args json.RawMessage) (string, bool) {
	var a struct {
		Path     any `json:"path"`
		FilePath any `json:"file_path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return "", false
	}
	for _, v := range []any{a.Path, a.FilePath} {
		if s, ok := v.(string); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// gatePath is a path argument as the gate sees it, lexically and with the
// symlinks of its existing part resolved.
type gatePath struct {
	raw      string
	abs, rel string // cleaned absolute; slash form relative to the root, "" outside it
	realAbs  string
	realRel  string
	dotdot   bool // the path as given has a .. component
	unsure   bool // it starts with ~ or crosses a dangling symlink
	// extra and realExtra: outside the root, the path lies in an extra
	// root as written (extra) and resolved (realExtra).
	extra, realExtra bool
	protected        string // the protected directory it lies in, or ""
}

// resolve places p, relative to the root unless absolute.
func (g *Gate) resolve(p string) gatePath { return g.resolveFrom(g.root, p) }

// resolveFrom places p, relative to the directory base unless absolute.
func (g *Gate) resolveFrom(base, p string) gatePath {
	gp := gatePath{raw: p}
	comps := strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' })
	for _, c := range comps {
		gp.dotdot = gp.dotdot || c == ".."
	}
	gp.protected = protectedIn(comps, g.protected)
	abs := filepath.FromSlash(p)
	if strings.HasPrefix(p, "~") {
		gp.unsure = true
	} else if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	gp.abs = filepath.Clean(abs)
	gp.rel = relInside(g.root, gp.abs)
	if gp.rel == "" {
		gp.rel = relInside(g.realRoot, gp.abs)
	}
	real, ok := resolveExistingPrefix(gp.abs)
	gp.unsure = gp.unsure || !ok
	gp.realAbs = real
	gp.realRel = relInside(g.realRoot, real)
	realExtraRel := ""
	if gp.rel == "" {
		gp.extra = insideAny(append(slices.Clip(g.extra), g.realExtra...), gp.abs) != ""
	}
	if gp.realRel == "" {
		realExtraRel = insideAny(g.realExtra, real)
		gp.realExtra = realExtraRel != ""
	}
	for _, s := range []string{gp.rel, gp.realRel, realExtraRel} {
		if gp.protected == "" && s != "" {
			gp.protected = protectedIn(strings.Split(s, "/"), g.protected)
		}
	}
	if gp.protected == "" && gp.realRel == "" && realExtraRel == "" {
		gp.protected = protectedIn(strings.Split(filepath.ToSlash(real), "/"), g.protected)
	}
	return gp
}

// insideAny returns abs relative to the first of roots that contains it,
// or "" when none does.
func insideAny(roots []string, abs string) string {
	for _, r := range roots {
		if rel := relInside(r, abs); rel != "" {
			return rel
		}
	}
	return ""
}

// allowable reports whether an allow rule or edit mode may allow a write to
// the path: it lies inside the workspace (the root or an extra root), both
// as written and resolved.
func (gp gatePath) allowable() bool {
	return (gp.rel != "" || gp.extra) && (gp.realRel != "" || gp.realExtra) && !gp.dotdot && !gp.unsure
}

// matches reports whether a deny or ask rule matches the path as written or
// as resolved.
func (gp gatePath) matches(r *rule) bool {
	return r.matchPath(gp.rel, gp.abs) || r.matchPath(gp.realRel, gp.realAbs)
}

// allowedBy reports whether an allow rule matches the path both as written
// and as resolved, and the path is one an allow may cover.
func (gp gatePath) allowedBy(r *rule) bool {
	return r.kind == ruleAny || (gp.allowable() && r.matchPath(gp.rel, gp.abs) && r.matchPath(gp.realRel, gp.realAbs))
}

// relInside returns abs relative to root in slash form, "." for the root,
// or "" when abs lies outside it.
func relInside(root, abs string) string {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// resolveExistingPrefix resolves the symlinks of the longest existing
// prefix of the clean absolute path p and appends the rest. It reports
// false when p crosses a symlink it cannot resolve (a dangling link, whose
// target a write would create).
func resolveExistingPrefix(p string) (string, bool) {
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), true
		}
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return p, false
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, true
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
