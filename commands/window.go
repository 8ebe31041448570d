package commands

import (
	"fmt"

	"decode/agent"
	"decode/agent/llm"
)

// modelWindow is the token budget of the named model: the [models."NAME"]
// table of config where it sets one, else the built-in model table. A
// configured window without max_output gets an eighth of it. The second
// result is false when neither knows the model.
func modelWindow(cfg Config, name string) (llm.Window, bool) {
	var w llm.Window
	if m, ok := llm.LookupModel(name); ok {
		w = m.Window()
	}
	if mc, ok := cfg.Models[name]; ok {
		if mc.ContextWindow > 0 {
			w = llm.Window{Context: mc.ContextWindow, MaxOutput: mc.ContextWindow / 8}
		}
		if mc.MaxOutput > 0 {
			w.MaxOutput = mc.MaxOutput
		}
	}
	return w, w.Known()
}

// checkModels refuses per-model settings that cannot work.
func checkModels(cfg Config) error {
	for name, m := range cfg.Models {
		if m.ContextWindow < 0 || m.MaxOutput < 0 {
			return fmt.Errorf("config: [models.%q]: context_window and max_output are token counts and cannot be negative", name)
		}
		if m.InputPerMTok < 0 || m.OutputPerMTok < 0 {
			return fmt.Errorf("config: [models.%q]: input_per_mtok and output_per_mtok are prices in USD and cannot be negative", name)
		}
		if m.ContextWindow > 0 && m.MaxOutput >= m.ContextWindow {
			return fmt.Errorf("config: [models.%q]: max_output (%d) must be smaller than context_window (%d)", name, m.MaxOutput, m.ContextWindow)
		}
	}
	if t := cfg.Compaction.Threshold; t < 0 || t > 1 {
		return fmt.Errorf("config: [compaction] threshold = %v must be between 0 and 1 (a share of the window, e.g. 0.85)", t)
	}
	return nil
}

// compactOptions says when and how a run compacts its context: the
// model's window (by the name given, else the model's own), the
// [compaction] table, and the mode and rules for the state record.
func compactOptions(cfg Config, given, name, mode string, o *AgentOptions) agent.CompactOptions {
	w, ok := modelWindow(cfg, given)
	if !ok {
		w, _ = modelWindow(cfg, name)
	}
	var rules []string
	for _, r := range append(append([]string{}, cfg.Allow...), o.Allow...) {
		rules = append(rules, "allow "+r)
	}
	for _, r := range append(append([]string{}, cfg.Deny...), o.Deny...) {
		rules = append(rules, "deny "+r)
	}
	return agent.CompactOptions{
		Window: w, Threshold: cfg.Compaction.Threshold, KeepTokens: cfg.Compaction.KeepTokens,
		Disabled: cfg.Compaction.Disabled, Mode: mode, Rules: rules,
	}
}
