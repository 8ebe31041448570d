package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
	"decode/tools"
	"decode/tools/sandbox"
)

// checkFlags validates every run flag on its own, before config, the
// session store or a model is touched: a bad value is a usage error (exit
// 2) whatever else is missing, an API key included.
func (o *AgentOptions) checkFlags() error {
	if o.Mode != "" {
		if _, err := tools.ParseMode(o.Mode); err != nil {
			return usageErrorf("--mode: %v", err)
		}
	}
	switch o.OnAsk {
	case "", "pause", "deny":
	default:
		return usageErrorf("--on-ask %q: use pause or deny", o.OnAsk)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--max-turns", o.MaxTurns}, {"--max-steps", o.MaxSteps}} {
		if n.v < 0 {
			return usageErrorf("%s %d: give a positive number, or 0 for no limit", n.flag, n.v)
		}
	}
	if o.MaxCost < 0 || math.IsNaN(o.MaxCost) || math.IsInf(o.MaxCost, 0) {
		return usageErrorf("--max-cost %v: give a positive amount in USD, or 0 for no limit", o.MaxCost)
	}
	if o.Timeout < 0 {
		return usageErrorf("--timeout %s: give a positive duration such as 20m, or 0 for no limit", o.Timeout)
	}
	if o.Plan != "" && o.PlanFile != "" {
		return usageErrorf("give --plan SESSION or --plan-file FILE, not both")
	}
	if o.SystemFile != "" && o.SystemPrompt != "" {
		return usageErrorf("give --system-file FILE or --system-prompt TEXT, not both")
	}
	if o.Quiet && o.Verbose {
		return usageErrorf("-q and -v contradict each other: -q prints nothing but the answer, -v adds what decode is doing on stderr; give one of them")
	}
	if err := o.checkValues(); err != nil {
		return err
	}
	if err := o.checkPaths(); err != nil {
		return err
	}
	return o.checkLastMessage()
}

// checkValues checks the flags whose values have a syntax of their own:
// --sandbox, --allow-net, --allow and --deny rules, --idle-timeout.
func (o *AgentOptions) checkValues() error {
	if o.Sandbox != "" {
		if _, err := sandbox.ParseLevel(o.Sandbox); err != nil {
			return usageErrorf("--sandbox: %v", err)
		}
	}
	for _, h := range o.AllowNet {
		if h == "*" {
			continue
		}
		if _, err := sandbox.ParseHostRule(h); err != nil {
			return usageErrorf("--allow-net: %v", err)
		}
	}
	for _, rs := range []struct {
		flag  string
		rules []string
	}{{"--allow", o.Allow}, {"--deny", o.Deny}} {
		for _, r := range rs.rules {
			if err := tools.CheckRule(r); err != nil {
				return usageErrorf("%s: %v", rs.flag, err)
			}
		}
	}
	if _, err := idleTimeout(o.IdleTimeout); err != nil {
		return usageErrorf("--idle-timeout: %v", err)
	}
	return nil
}

// checkPaths checks that the directories and files the flags name exist,
// relative to the working directory (-C); a wrong -C is reported too.
func (o *AgentOptions) checkPaths() error {
	if len(o.AddDirs) == 0 && o.SystemFile == "" && o.AppendSystemFile == "" {
		return nil
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	for _, d := range absDirs(dir, o.AddDirs) {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return usageErrorf("--add-dir %s: not a directory", d)
		}
	}
	for _, f := range []struct{ flag, path string }{{"--system-file", o.SystemFile}, {"--append-system-file", o.AppendSystemFile}} {
		if f.path == "" {
			continue
		}
		file, err := os.Open(absPath(dir, f.path))
		if err != nil {
			return usageErrorf("%s: %v", f.flag, err)
		}
		file.Close()
	}
	return nil
}

// flagSpec is what the flags give of a run spec: the fields of flags not
// given are zero. Paths are made absolute against dir; the schema is the
// one already loaded.
func (o *AgentOptions) flagSpec(dir string, schema *agent.ResponseSchema) session.RunSpec {
	s := session.RunSpec{
		Model: o.Model, Mode: o.Mode, OnAsk: o.OnAsk,
		Allow: o.Allow, Deny: o.Deny, AddDirs: absDirs(dir, o.AddDirs),
		MaxTurns: o.MaxTurns, MaxSteps: o.MaxSteps, MaxCost: o.MaxCost, Timeout: o.Timeout,
		Sandbox:          o.Sandbox,
		AllowNet:         slices.Contains(o.AllowNet, "*"),
		AllowHosts:       slices.DeleteFunc(slices.Clone(o.AllowNet), func(h string) bool { return h == "*" }),
		SystemFile:       fileRef(dir, o.SystemFile),
		AppendSystemFile: fileRef(dir, o.AppendSystemFile),
		SystemPrompt:     o.SystemPrompt, AppendSystemPrompt: o.AppendSystemPrompt,
	}
	if schema != nil {
		s.Schema, s.SchemaFile = schema.Raw, absPath(dir, schema.Path)
	}
	return s
}

// newSpec is the spec of a new session: the flags over config.
func (o *AgentOptions) newSpec(cfg Config, dir string, schema *agent.ResponseSchema) session.RunSpec {
	s := o.flagSpec(dir, schema)
	if s.Model == "" {
		s.Model = cfg.Model
	}
	s.Mode = gateMode(o, cfg)
	if s.MaxTurns == 0 {
		s.MaxTurns = cfg.MaxTurns
	}
	return s
}

// fileRef names a file flag's file by path and content hash; a file that
// cannot be read gets no hash (reading it later reports why).
func fileRef(dir, path string) *session.FileRef {
	if path == "" {
		return nil
	}
	path = absPath(dir, path)
	return &session.FileRef{Path: path, SHA256: specFileHash(path)}
}

func specFileHash(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func absPath(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// continueSpec works out the spec a resumed (or replayed) session runs
// with: the one it recorded, with what the flags of this command change.
// It sets o to it, remembers the changes for the run to record, and says
// on stderr what changed and what wider permissions carry over.
func (o *AgentOptions) continueSpec(es []session.Entry, dir string) error {
	recorded, _ := session.SpecOf(es)
	model, command := sessionModel(es)
	if model != "" {
		recorded.Model = model // a replay's fork entry switches it
	}
	o.verboseSpec(recorded)
	o.modelFrom = "the session's recorded spec"
	if o.Model != "" {
		o.modelFrom = "-m"
	}
	var schema *agent.ResponseSchema
	if o.SchemaFile != "" {
		var err error
		if schema, err = loadSchema(o.SchemaFile, firstNonEmpty(repoRoot(dir), dir), o.F.configDir()); err != nil {
			return err
		}
	}
	modeGiven := o.Mode != ""
	spec, changes := recorded.Override(o.flagSpec(dir, schema))
	o.apply(spec, dir)
	if (command == "ask" || command == "plan") && !modeGiven {
		o.Command, o.Mode = command, "plan" // a read-only session stays read-only
	}
	o.respec = changes
	o.recordedMCP = recordedMCP(es)
	o.usedTools = usedTools(es)
	for _, c := range changes {
		fmt.Fprintln(o.F.IO.Err, "decode: "+c.String())
	}
	if wider := spec.Wider(); len(wider) > 0 && !o.Quiet && !anyLooser(changes) {
		fmt.Fprintln(o.F.IO.Err, "decode: continuing with the session's permissions: "+strings.Join(wider, ", "))
	}
	return nil
}

func anyLooser(cs []session.SpecChange) bool {
	for _, c := range cs {
		if c.Looser {
			return true
		}
	}
	return false
}

// apply sets o's run settings to spec's. A system prompt file that is gone
// or changed since the session recorded it is reported.
func (o *AgentOptions) apply(spec session.RunSpec, dir string) {
	o.spec = &spec
	o.Model, o.Mode, o.OnAsk = spec.Model, spec.Mode, spec.OnAsk
	o.Allow, o.Deny, o.AddDirs = spec.Allow, spec.Deny, spec.AddDirs
	o.MaxTurns, o.MaxSteps, o.MaxCost, o.Timeout = spec.MaxTurns, spec.MaxSteps, spec.MaxCost, spec.Timeout
	o.Sandbox, o.AllowNet = spec.Sandbox, slices.Clone(spec.AllowHosts)
	if spec.AllowNet {
		o.AllowNet = append(o.AllowNet, "*")
	}
	if o.SchemaFile == "" && len(spec.Schema) > 0 {
		o.schemaRaw, o.SchemaFile = spec.Schema, spec.SchemaFile
	}
	o.SystemFile = o.recordedFile("--system-file", o.SystemFile, spec.SystemFile, dir)
	o.AppendSystemFile = o.recordedFile("--append-system-file", o.AppendSystemFile, spec.AppendSystemFile, dir)
	o.SystemPrompt = firstNonEmpty(o.SystemPrompt, spec.SystemPrompt)
	o.AppendSystemPrompt = firstNonEmpty(o.AppendSystemPrompt, spec.AppendSystemPrompt)
}

// recordedFile is the system prompt file a resumed run reads: the flag's
// when given, else the recorded one, if it is still there.
func (o *AgentOptions) recordedFile(flag, given string, ref *session.FileRef, dir string) string {
	if given != "" || ref == nil {
		return given
	}
	switch h := specFileHash(ref.Path); {
	case h == "":
		fmt.Fprintf(o.F.IO.Err, "decode: warning: %s %s, which the session started with, cannot be read here; using the built-in system prompt\n", flag, ref.Path)
		return ""
	case h != ref.SHA256:
		fmt.Fprintf(o.F.IO.Err, "decode: warning: %s %s changed since the session started; using it as it is now\n", flag, ref.Path)
	}
	return ref.Path
}

// checkPrice refuses a cost limit that cannot trigger: --max-cost for a
// model whose price neither decode's table nor config ([models."NAME"]
// input_per_mtok, output_per_mtok) knows.
func checkPrice(cfg Config, maxCost float64, m llm.Model) error {
	if maxCost <= 0 {
		return nil
	}
	for _, n := range priceNames(m) {
		if _, ok := modelPrice(cfg, n); ok {
			return nil
		}
	}
	return usageErrorf("--max-cost: the price of %s is unknown, so the cost cannot be counted; give it in config as [models.%q] input_per_mtok and output_per_mtok (USD per million tokens), or use --max-turns", m.Name(), m.Name())
}

// priceNames are the names m may be priced under: its own, and for a
// scripted model the model its responses report.
func priceNames(m llm.Model) []string {
	names := []string{m.Name()}
	if r, ok := m.(interface{ Reports() string }); ok && r.Reports() != "" {
		names = append(names, r.Reports())
	}
	return names
}

// modelPrice is a model's price: config's [models."NAME"], else decode's
// table.
func modelPrice(cfg Config, name string) (llm.ModelInfo, bool) {
	if mc, ok := cfg.Models[name]; ok && (mc.InputPerMTok > 0 || mc.OutputPerMTok > 0) {
		return llm.ModelInfo{Price: llm.Price{Input: mc.InputPerMTok, Output: mc.OutputPerMTok}}, true
	}
	info, ok := llm.LookupModel(name)
	return info, ok && (info.Input > 0 || info.Output > 0)
}

// priceFunc prices a response for agent.Options.Cost: config's price for
// the model when it gives one, else decode's table.
func priceFunc(cfg Config, configured string) func(reported string, u llm.Usage) float64 {
	table := costFunc(configured)
	return func(reported string, u llm.Usage) float64 {
		for _, n := range []string{reported, configured} {
			if mc, ok := cfg.Models[n]; ok && n != "" && (mc.InputPerMTok > 0 || mc.OutputPerMTok > 0) {
				return llm.ModelInfo{Price: llm.Price{Input: mc.InputPerMTok, Output: mc.OutputPerMTok}}.Cost(u)
			}
		}
		return table(reported, u)
	}
}
