package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TypeSpec records that a resume changed the run spec with flags: the
// changes, and the spec in effect from then on.
const TypeSpec = "spec"

// RunSpec is what a run was started with, recorded in its start entry so
// that decode resume, resume --due, replay and a resume on another machine
// continue with it: the model, the permissions, the limits (as caps), the
// sandbox, the answer's schema and the system prompt files.
type RunSpec struct {
	Model string `json:"model,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Allow and Deny are the rules given on the command line; config's
	// rules apply where the session runs.
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// AddDirs are the extra workspace directories, absolute.
	AddDirs []string `json:"add_dirs,omitempty"`
	// OnAsk is pause or deny.
	OnAsk string `json:"on_ask,omitempty"`
	// MaxTurns, MaxSteps, MaxCost (USD) and Timeout cap the task; 0 means
	// no cap.
	MaxTurns int           `json:"max_turns,omitempty"`
	MaxSteps int           `json:"max_steps,omitempty"`
	MaxCost  float64       `json:"max_cost,omitempty"`
	Timeout  time.Duration `json:"timeout_ns,omitempty"`
	// Sandbox is how commands are confined (auto, strict, off); "" is the
	// default.
	Sandbox string `json:"sandbox,omitempty"`
	// AllowNet lets sandboxed commands reach the whole network.
	AllowNet bool `json:"allow_net,omitempty"`
	// AllowHosts are the hosts sandboxed commands may reach through
	// decode's proxy (--allow-net HOST).
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// Schema is the JSON Schema the final answer must satisfy, compact,
	// with the file it came from.
	Schema     json.RawMessage `json:"schema,omitempty"`
	SchemaFile string          `json:"schema_file,omitempty"`
	// SystemFile replaces the system prompt; AppendSystemFile extends it.
	SystemFile       *FileRef `json:"system_file,omitempty"`
	AppendSystemFile *FileRef `json:"append_system_file,omitempty"`
	// SystemPrompt and AppendSystemPrompt are --system-prompt's and
	// --append-system-prompt's text, kept so a resume sends the same.
	SystemPrompt       string `json:"system_prompt,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
}

// FileRef names a file by path and by the sha256 of its content, so that a
// change is noticed.
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// SpecChange is one setting a resume changed; From and To are as printed
// ("mode: default → edit").
type SpecChange struct {
	Setting string `json:"setting"`
	From    string `json:"from"`
	To      string `json:"to"`
	// Looser is set when the change widens what may run without asking.
	Looser bool `json:"looser,omitempty"`
}

func (c SpecChange) String() string {
	return fmt.Sprintf("%s: %s → %s", c.Setting, orNone(c.From), orNone(c.To))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// SpecData is a spec entry.
type SpecData struct {
	Changes []SpecChange `json:"changes"`
	Spec    RunSpec      `json:"spec"`
}

// SpecOf returns the run spec in effect at the end of entries: the start
// entry's, as changed by the last spec entry since. A session from before
// specs were recorded gets its start entry's model and mode. The second
// result is false when there is no start entry.
func SpecOf(entries []Entry) (RunSpec, bool) {
	var spec RunSpec
	found := false
	for _, e := range entries {
		switch e.Type {
		case TypeStart:
			var d StartData
			if e.Decode(&d) != nil {
				continue
			}
			found = true
			if d.Spec != nil {
				spec = *d.Spec
			} else {
				spec = RunSpec{Model: d.Model, Mode: d.Mode}
			}
		case TypeSpec:
			var d SpecData
			if e.Decode(&d) == nil {
				spec = d.Spec
			}
		}
	}
	return spec, found
}

// modeRank orders the modes from the tightest to the loosest.
var modeRank = map[string]int{"plan": 0, "default": 1, "edit": 2, "bypass": 3}

// Override applies what the flags of a resume give (flags' zero fields
// are not given) to the recorded spec s, and lists what changed. Scalar
// settings are replaced; rules and directories are added to the recorded
// ones. The model is not a change of spec: -m picks the model of one
// resume, and each response records the model that gave it.
func (s RunSpec) Override(flags RunSpec) (RunSpec, []SpecChange) {
	out := s
	var ch []SpecChange
	str := func(name string, dst *string, v string, looser bool) {
		if v != "" && v != *dst {
			ch = append(ch, SpecChange{Setting: name, From: *dst, To: v, Looser: looser})
			*dst = v
		}
	}
	list := func(name string, dst *[]string, vs []string, looser bool) {
		old := strings.Join(*dst, ", ")
		added := false
		for _, v := range vs {
			if !slices.Contains(*dst, v) {
				*dst = append(slices.Clip(*dst), v)
				added = true
			}
		}
		if added {
			ch = append(ch, SpecChange{Setting: name, From: old, To: strings.Join(*dst, ", "), Looser: looser})
		}
	}
	num := func(name string, changed bool, from, to string, looser bool) {
		if changed {
			ch = append(ch, SpecChange{Setting: name, From: from, To: to, Looser: looser})
		}
	}
	if flags.Model != "" {
		out.Model = flags.Model
	}
	str("mode", &out.Mode, flags.Mode, flags.Mode != "" && modeRank[flags.Mode] > modeRank[orDefault(s.Mode)])
	list("allow", &out.Allow, flags.Allow, true)
	list("deny", &out.Deny, flags.Deny, false)
	list("add-dir", &out.AddDirs, flags.AddDirs, true)
	str("on-ask", &out.OnAsk, flags.OnAsk, false)
	str("sandbox", &out.Sandbox, flags.Sandbox, flags.Sandbox == "off")
	if flags.AllowNet && !s.AllowNet {
		ch = append(ch, SpecChange{Setting: "allow-net", From: "no", To: "yes", Looser: true})
		out.AllowNet = true
	}
	list("allow-net", &out.AllowHosts, flags.AllowHosts, true)
	if flags.MaxTurns != 0 && flags.MaxTurns != s.MaxTurns {
		num("max-turns", true, capText(float64(s.MaxTurns), "%.0f"), capText(float64(flags.MaxTurns), "%.0f"), false)
		out.MaxTurns = flags.MaxTurns
	}
	if flags.MaxSteps != 0 && flags.MaxSteps != s.MaxSteps {
		num("max-steps", true, capText(float64(s.MaxSteps), "%.0f"), capText(float64(flags.MaxSteps), "%.0f"), false)
		out.MaxSteps = flags.MaxSteps
	}
	if flags.MaxCost != 0 && flags.MaxCost != s.MaxCost {
		num("max-cost", true, capText(s.MaxCost, "$%g"), capText(flags.MaxCost, "$%g"), false)
		out.MaxCost = flags.MaxCost
	}
	if flags.Timeout != 0 && flags.Timeout != s.Timeout {
		num("timeout", true, durText(s.Timeout), durText(flags.Timeout), false)
		out.Timeout = flags.Timeout
	}
	if len(flags.Schema) > 0 && string(flags.Schema) != string(s.Schema) {
		num("schema", true, s.SchemaFile, flags.SchemaFile, false)
		out.Schema, out.SchemaFile = flags.Schema, flags.SchemaFile
	}
	if flags.SystemFile != nil && (s.SystemFile == nil || *flags.SystemFile != *s.SystemFile) {
		num("system-file", true, refText(s.SystemFile), refText(flags.SystemFile), false)
		out.SystemFile = flags.SystemFile
	}
	if flags.AppendSystemFile != nil && (s.AppendSystemFile == nil || *flags.AppendSystemFile != *s.AppendSystemFile) {
		num("append-system-file", true, refText(s.AppendSystemFile), refText(flags.AppendSystemFile), false)
		out.AppendSystemFile = flags.AppendSystemFile
	}
	if flags.SystemPrompt != "" && flags.SystemPrompt != s.SystemPrompt {
		num("system-prompt", true, clipSpec(s.SystemPrompt), clipSpec(flags.SystemPrompt), false)
		out.SystemPrompt = flags.SystemPrompt
	}
	if flags.AppendSystemPrompt != "" && flags.AppendSystemPrompt != s.AppendSystemPrompt {
		num("append-system-prompt", true, clipSpec(s.AppendSystemPrompt), clipSpec(flags.AppendSystemPrompt), false)
		out.AppendSystemPrompt = flags.AppendSystemPrompt
	}
	return out, ch
}

// Wider lists what s allows beyond a default run: a mode looser than
// default, allow rules, extra directories, no sandbox. A resume that
// carries these over says so.
func (s RunSpec) Wider() []string {
	var out []string
	if modeRank[orDefault(s.Mode)] > modeRank["default"] {
		out = append(out, "mode "+s.Mode)
	}
	for _, a := range s.Allow {
		out = append(out, "allow "+a)
	}
	for _, d := range s.AddDirs {
		out = append(out, "add-dir "+d)
	}
	if s.Sandbox == "off" {
		out = append(out, "sandbox off")
	}
	if s.AllowNet {
		out = append(out, "allow-net")
	}
	for _, h := range s.AllowHosts {
		out = append(out, "allow-net "+h)
	}
	return out
}

func orDefault(mode string) string {
	if mode == "" {
		return "default"
	}
	return mode
}

func capText(v float64, format string) string {
	if v == 0 {
		return "no limit"
	}
	return fmt.Sprintf(format, v)
}

func durText(d time.Duration) string {
	if d == 0 {
		return "no limit"
	}
	return d.String()
}

// clipSpec shows a prompt text of a spec change in a few words.
func clipSpec(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return s
}

func refText(r *FileRef) string {
	if r == nil {
		return ""
	}
	return r.Path
}
