package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"decode/agent"
	"decode/agent/llm/providers"
	"decode/memory"
	"decode/session"
	"decode/tools"
)

// verbosef writes one -v line on stderr, prefixed "decode: " like every
// diagnostic; without -v it does nothing. Once the run's sink exists the
// line is written under its lock, so it never lands inside the spinner's
// line or an approval prompt. stderr is the redacting writer Main set up,
// so a key in a line is masked like anywhere else.
func (o *AgentOptions) verbosef(format string, args ...any) {
	if !o.Verbose {
		return
	}
	line := "decode: " + fmt.Sprintf(format, args...) + "\n"
	if o.vlock != nil {
		o.vlock.Lock()
		defer o.vlock.Unlock()
	}
	io.WriteString(o.F.IO.Err, line)
}

// verboseConfig says which config files were read and which were absent,
// and the DECODE_* variables that override them.
func (o *AgentOptions) verboseConfig(cfg Config) {
	if !o.Verbose {
		return
	}
	for _, f := range cfg.files {
		o.verbosef("config: %s", f)
	}
	var set []string
	for _, v := range []string{"DECODE_MODEL", "DECODE_MODE", "DECODE_MAX_TURNS", "DECODE_SNAPSHOTS", "DECODE_IDLE_TIMEOUT", "DECODE_SANDBOX", "DECODE_PROXY", "DECODE_STORE"} {
		if o.F.Getenv(v) != "" {
			set = append(set, v)
		}
	}
	if len(set) > 0 {
		o.verbosef("config: from the environment: %s", strings.Join(set, ", "))
	}
}

// modelSource says what chose the model of a new session: -m, a config
// file or DECODE_MODEL, or nothing (then the key that is set decides).
func modelSource(flag string, cfg Config) string {
	switch {
	case flag != "":
		return "-m"
	case cfg.Model != "":
		return cfg.modelFrom
	}
	return ""
}

// verboseModel says which model and provider the run uses, where its
// requests go and where its key comes from: the variable's name, never
// the key.
func (o *AgentOptions) verboseModel(name string, cfg Config) {
	if !o.Verbose {
		return
	}
	f := o.F
	from := o.modelFrom
	if name == "" {
		var v string
		name, v, _ = f.defaultModel()
		from = v + " is set and no model is configured"
	}
	if from == "" {
		from = "config"
	}
	if file, ok := providers.IsScript(name); ok {
		o.verbosef("model: %s (from %s), scripted from %s: no provider, no endpoint, no key", name, from, file)
		return
	}
	full := providers.Expand(name)
	alias := ""
	if full != name {
		alias = ", alias of " + full
	}
	pname, model, err := providers.Split(name)
	p, ok := providers.Find(pname)
	if err != nil || !ok {
		return // newModel has already refused it
	}
	o.verbosef("model: %s:%s (from %s%s), provider %s", pname, model, from, alias, pname)
	pc := cfg.Providers[pname]
	s := providers.Settings{BaseURL: pc.BaseURL, APIKeyEnv: pc.APIKeyEnv}
	if proxy := f.Getenv("DECODE_PROXY"); proxy != "" && !p.NoKey {
		o.verbosef("endpoint: decode proxy at %s (DECODE_PROXY), which holds the key; this process holds none", proxy)
		return
	}
	base, set := p.Endpoint(f.Getenv, s)
	switch set {
	case "config":
		set = "base_url in config"
	case "default":
		set = "the provider's default"
	}
	o.verbosef("endpoint: %s (%s), key %s", safeURL(base), set, keySource(f, p, s, pc))
}

// keySource names where p's key comes from without reading it: the
// variable that holds it, api_key_cmd, or the key store.
func keySource(f *Factory, p providers.Provider, s providers.Settings, pc ProviderConfig) string {
	if p.NoKey {
		return "not needed"
	}
	for _, v := range p.KeyVars(s) {
		if f.Getenv(v) != "" {
			return "from " + v
		}
	}
	if pc.APIKeyCmd != "" {
		return "from api_key_cmd"
	}
	return "from the key store (decode auth login)"
}

// safeURL hides a URL's user information (https://user:pass@host or
// https://TOKEN@host), as decode doctor does.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

// verboseMemory says which AGENTS.md / MEMORY.md files and skills the
// system prompt takes.
func (o *AgentOptions) verboseMemory(files []memory.File, skills []memory.Skill) {
	if !o.Verbose {
		return
	}
	if len(files) == 0 {
		o.verbosef("memory: no AGENTS.md or MEMORY.md found from %s up", o.workDirOr("."))
	}
	for _, m := range files {
		cut := ""
		if m.Cut != "" {
			cut = ", " + m.Cut
		}
		o.verbosef("memory: %s (%s, %d bytes%s)", m.Path, plural(m.Lines, "line"), m.Size, cut)
	}
	for _, s := range skills {
		trust := ""
		if s.Untrusted {
			trust = ", from an untrusted repository"
		}
		o.verbosef("skill: %s (%s%s)", s.Name, s.Path, trust)
	}
}

func (o *AgentOptions) workDirOr(def string) string {
	if d, err := o.F.workDir(o.Dir); err == nil {
		return d
	}
	return def
}

// verboseGateSetup says the mode and the rules the gate decides with, and
// how the commands of this run are contained.
func (o *AgentOptions) verboseGateSetup(mode tools.Mode, allow, deny []string) {
	if !o.Verbose {
		return
	}
	rules := ""
	if len(allow) > 0 {
		rules += "; allow " + strings.Join(allow, ", ")
	}
	if len(deny) > 0 {
		rules += "; deny " + strings.Join(deny, ", ")
	}
	o.verbosef("gate: mode %s%s", mode, rules)
	switch {
	case o.Command == "ask" || mode == tools.ModePlan:
		o.verbosef("sandbox: not set up: this run has no bash tool (read-only tools only)")
	default:
		o.verbosef("sandbox: %s", o.sandbox.summary)
	}
}

// verboseSpec says what a resumed or replayed session's start recorded,
// which the run continues with unless a flag changes it.
func (o *AgentOptions) verboseSpec(s session.RunSpec) {
	if !o.Verbose {
		return
	}
	o.verbosef("spec: the session recorded %s; flags given here change it", describeSpec(s))
}

// describeSpec renders a run spec in one line: the settings it holds,
// with prompts and schemas by size, not text.
func describeSpec(s session.RunSpec) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("model", s.Model)
	add("mode", firstNonEmpty(s.Mode, "default"))
	add("on-ask", s.OnAsk)
	add("allow", strings.Join(s.Allow, ", "))
	add("deny", strings.Join(s.Deny, ", "))
	add("add-dir", strings.Join(s.AddDirs, ", "))
	if s.MaxTurns > 0 {
		add("max-turns", fmt.Sprint(s.MaxTurns))
	}
	if s.MaxSteps > 0 {
		add("max-steps", fmt.Sprint(s.MaxSteps))
	}
	if s.MaxCost > 0 {
		add("max-cost", fmt.Sprint(s.MaxCost))
	}
	if s.Timeout > 0 {
		add("timeout", s.Timeout.String())
	}
	add("sandbox", s.Sandbox)
	hosts := s.AllowHosts
	if s.AllowNet {
		hosts = append([]string{"*"}, hosts...)
	}
	add("allow-net", strings.Join(hosts, ", "))
	if len(s.Schema) > 0 {
		add("schema", firstNonEmpty(s.SchemaFile, fmt.Sprintf("(%d bytes)", len(s.Schema))))
	}
	if s.SystemFile != nil {
		add("system-file", s.SystemFile.Path)
	}
	if s.AppendSystemFile != nil {
		add("append-system-file", s.AppendSystemFile.Path)
	}
	if s.SystemPrompt != "" {
		add("system-prompt", fmt.Sprintf("(%d bytes)", len(s.SystemPrompt)))
	}
	if s.AppendSystemPrompt != "" {
		add("append-system-prompt", fmt.Sprintf("(%d bytes)", len(s.AppendSystemPrompt)))
	}
	return strings.Join(parts, "; ")
}

// verboseGate reports each of the gate's decisions on stderr (-v): which
// rule allowed or denied a call, or that it was read-only, or that it asks
// and what happens then.
type verboseGate struct {
	agent.Gate
	o    *AgentOptions
	mode tools.Mode
	// asked says what follows an ask in this run: a prompt, a pause or a
	// denial.
	asked string
}

// newVerboseGate wraps opts.Gate once the run's approver and --on-ask are
// known.
func newVerboseGate(o *AgentOptions, opts *agent.Options, mode tools.Mode) agent.Gate {
	asked := "the run pauses (exit 3) for decode approve or deny"
	switch {
	case opts.Approve != nil && o.approve != nil:
		asked = "asking the editor"
	case opts.Approve != nil:
		asked = "asking at the terminal"
	case opts.OnAsk == "deny":
		asked = "no terminal and --on-ask deny, so it is denied"
	}
	return &verboseGate{Gate: opts.Gate, o: o, mode: mode, asked: asked}
}

func (g *verboseGate) Check(name string, readOnly bool, args json.RawMessage) tools.Verdict {
	v := g.Gate.Check(name, readOnly, args)
	what := strings.TrimSpace(name + " " + agent.Summarize(args))
	g.o.verbosef("gate: %s: %s", what, describeVerdict(v, readOnly, g.mode, g.asked))
	return v
}

// describeVerdict puts a gate verdict in words for -v.
func describeVerdict(v tools.Verdict, readOnly bool, mode tools.Mode, asked string) string {
	switch v.Decision {
	case tools.Allow:
		switch {
		case v.Rule != "":
			return "allowed by the rule " + v.Rule
		case mode == tools.ModeBypass:
			return "allowed (bypass mode)"
		case readOnly:
			return "allowed (read-only)"
		case mode == tools.ModeEdit:
			return "allowed (edit mode)"
		}
		return "allowed (read-only: it changes nothing in the workspace)"
	case tools.Ask:
		if v.Rule != "" {
			return fmt.Sprintf("asks by the rule %s; %s", v.Rule, asked)
		}
		return fmt.Sprintf("asks (%s); %s", v.Reason, asked)
	}
	if v.Rule != "" {
		return "denied by the rule " + v.Rule
	}
	return "denied: " + v.Reason
}
