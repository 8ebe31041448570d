package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"decode/agent/llm/providers"

	"github.com/urfave/cli/v2"

	"decode/agent/llm"
)

// ModelsOptions are the inputs of `decode models`.
type ModelsOptions struct {
	F    *Factory
	Dir  string
	JSON bool
}

// NewCmdModels builds `decode models`.
func NewCmdModels(f *Factory, runF func(*cli.Context, *ModelsOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *ModelsOptions) error { return modelsRun(o) }
	}
	return &cli.Command{
		Name:  "models",
		Usage: "list known models with context window and price, the keys that are set and the endpoints in use",
		Description: `Lists the models of decode's price table per provider (context window, USD per
million tokens), which API key variables are set (names only, never values),
which base URL each provider uses and why, and the model decode picks when no
-m is given. Other model names work too: providers add models faster than the
table follows, and they simply have no known cost.

   decode models
   decode models --json | jq -r '.default.model'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of tables"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "read the repository config of `DIR`"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("models takes no arguments")
			}
			return runF(c, &ModelsOptions{F: f, Dir: c.String("dir"), JSON: c.Bool("json")})
		},
	}
}

// modelsReport is what `decode models` shows; its JSON form is --json.
type modelsReport struct {
	Unit      string           `json:"unit"`
	Default   *modelDefault    `json:"default"`
	Providers []providerReport `json:"providers"`
	// Configured are the windows config gives ([models."NAME"]), by name.
	Configured []configuredModel `json:"configured"`
	// Aliases are the short names -m takes.
	Aliases []providers.Alias `json:"aliases"`
}

// configuredModel is a model's window as config sets it.
type configuredModel struct {
	Model     string `json:"model"`
	Context   int    `json:"context"`
	MaxOutput int    `json:"max_output"`
}

// modelDefault is the model used when no -m is given, and what chose it.
type modelDefault struct {
	Model string `json:"model"`
	// From is DECODE_MODEL, config, or the key variable that is set.
	From string `json:"from"`
}

type providerReport struct {
	Name string `json:"name"`
	// KeyVars are the variables read for the key; KeySet names the one
	// that is set, "" when none is. Values are never shown.
	KeyVars     []string      `json:"key_vars"`
	KeySet      string        `json:"key_set"`
	NeedsKey    bool          `json:"needs_key"`
	BaseURL     string        `json:"base_url"`
	BaseURLFrom string        `json:"base_url_from"`
	Models      []modelReport `json:"models"`
}

type modelReport struct {
	llm.ModelInfo
	Default bool `json:"default,omitempty"`
}

func modelsRun(o *ModelsOptions) error {
	f := o.F
	dir, err := f.workDir(o.Dir)
	if err != nil {
		return err
	}
	cfg, warnings, err := f.loadConfig(repoRoot(dir))
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	rep := f.modelsReport(cfg)
	rep.Aliases = providers.Aliases()
	rep.Configured = []configuredModel{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		if w, ok := modelWindow(cfg, name); ok && cfg.Models[name].ContextWindow > 0 {
			rep.Configured = append(rep.Configured, configuredModel{Model: name, Context: w.Context, MaxOutput: w.MaxOutput})
		}
	}
	if o.JSON {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printModels(f.IO.Out, rep)
	return nil
}

// modelsReport gathers the providers, their models, keys and endpoints.
func (f *Factory) modelsReport(cfg Config) modelsReport {
	rep := modelsReport{Unit: "USD per million tokens"}
	def := f.chosenModel(cfg)
	rep.Default = def
	known := llm.KnownModels()
	for _, p := range providers.All() {
		pc := cfg.Providers[p.Name]
		pr := providerReport{Name: p.Name, KeyVars: p.KeyEnv, NeedsKey: !p.NoKey, Models: []modelReport{}}
		if pc.APIKeyEnv != "" {
			pr.KeyVars = []string{pc.APIKeyEnv}
		}
		for _, k := range pr.KeyVars {
			if f.Getenv(k) != "" {
				pr.KeySet = k
				break
			}
		}
		pr.BaseURL, pr.BaseURLFrom = f.baseURL(p, pc)
		for _, m := range known {
			if m.Provider == p.Name {
				pr.Models = append(pr.Models, modelReport{ModelInfo: m, Default: def != nil && isModel(def.Model, m)})
			}
		}
		rep.Providers = append(rep.Providers, pr)
	}
	return rep
}

// chosenModel is the model a run without -m uses: DECODE_MODEL, the
// config's model, or the one chosen by the keys that are set; nil when
// there is none.
func (f *Factory) chosenModel(cfg Config) *modelDefault {
	switch {
	case f.Getenv("DECODE_MODEL") != "":
		return &modelDefault{Model: cfg.Model, From: "DECODE_MODEL"}
	case cfg.Model != "":
		return &modelDefault{Model: cfg.Model, From: "config"}
	}
	name, from, err := f.defaultModel()
	if err != nil {
		return nil
	}
	return &modelDefault{Model: name, From: from}
}

// isModel reports whether a configured name is the table's model m.
func isModel(name string, m llm.ModelInfo) bool {
	pname, model, err := providers.Split(name)
	if err != nil || pname != m.Provider {
		return false
	}
	got, ok := llm.LookupModel(pname + ":" + model)
	return ok && got.Name == m.Name
}

func printModels(w io.Writer, rep modelsReport) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\t\tCONTEXT\tMAX OUT\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\t")
	asOf := map[string]bool{}
	for _, p := range rep.Providers {
		for _, m := range p.Models {
			mark := ""
			if m.Default {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s:%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, m.Name, mark, tokens(m.Context), tokens(m.MaxOutput),
				usd(m.Input), usd(m.Output), usd(m.CacheRead), usd(m.CacheWrite), longPrompt(m.Above))
			asOf[m.AsOf] = true
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nPrices in %s as of %s (- means charged as input).\n", rep.Unit, strings.Join(slices.Sorted(maps.Keys(asOf)), ", "))
	fmt.Fprintln(&b, "Names not listed work too, at unknown cost; openrouter:VENDOR/MODEL is priced as the vendor's model.")
	for _, c := range rep.Configured {
		fmt.Fprintf(&b, "%s: %s context, %s max out (config [models.%q])\n", c.Model, tokens(c.Context), tokens(c.MaxOutput), c.Model)
	}
	if len(rep.Configured) == 0 {
		fmt.Fprintln(&b, "A model not listed has no known window: set context_window under [models.\"NAME\"] in config so long sessions compact in time.")
	}

	var names []string
	for _, a := range rep.Aliases {
		names = append(names, a.Name+" = "+a.Model)
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "Aliases for -m: %s.\n", strings.Join(names, ", "))
	}

	fmt.Fprintln(&b)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tKEY\tBASE URL")
	for _, p := range rep.Providers {
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\n", p.Name, keyState(p), p.BaseURL, p.BaseURLFrom)
	}
	_ = tw.Flush()

	fmt.Fprintln(&b)
	if rep.Default != nil {
		fmt.Fprintf(&b, "default model: %s (from %s)\n", rep.Default.Model, rep.Default.From)
	} else {
		fmt.Fprintln(&b, "default model: none; set an API key variable above, or pass -m PROVIDER:MODEL")
	}
	// tabwriter pads the empty last cells; trailing blanks only get in the
	// way of diffs and greps.
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
	}
}

// keyState names the key variables and which one is set, never a value.
func keyState(p providerReport) string {
	switch {
	case !p.NeedsKey && p.KeySet == "":
		return "none needed"
	case p.KeySet != "":
		return p.KeySet + " set"
	}
	return strings.Join(p.KeyVars, " or ") + " not set"
}

// longPrompt describes a long-prompt price tier.
func longPrompt(t *llm.Tier) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("above %s: %s in, %s out", tokens(t.Tokens), usd(t.Input), usd(t.Output))
}

// tokens shortens a token count: 1048576 → 1M, 200000 → 200k.
func tokens(n int) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 0, 64) + "M"
	case n >= 1000:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// usd prints a price per million tokens with at least cents; 0 (not
// charged separately) as -.
func usd(p float64) string {
	if p == 0 {
		return "-"
	}
	if s := strconv.FormatFloat(p, 'f', -1, 64); len(s)-strings.IndexByte(s+".", '.') > 3 {
		return s
	}
	return strconv.FormatFloat(p, 'f', 2, 64)
}

// formatCost prints a cost in USD with the precision small costs need.
func formatCost(c float64) string {
	if c >= 1 {
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.4f", c)
}

// usageSummary is the token and cost part of the end-of-run line.
func usageSummary(u llm.Usage, cost float64) string {
	s := fmt.Sprintf("%d tokens in", u.Input)
	if u.CacheRead > 0 {
		s += fmt.Sprintf(" (%d cached)", u.CacheRead)
	}
	s += fmt.Sprintf(", %d out", u.Output)
	if cost > 0 {
		s += ", " + formatCost(cost)
	}
	return s
}
