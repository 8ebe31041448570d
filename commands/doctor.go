package commands

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"decode/agent/llm/providers"

	"github.com/urfave/cli/v2"
)

// DoctorOptions are the inputs of decode doctor.
type DoctorOptions struct {
	F   *Factory
	Dir string
}

// NewCmdDoctor builds `decode doctor`. runF replaces the run function in tests.
func NewCmdDoctor(f *Factory, runF func(context.Context, *DoctorOptions) error) *cli.Command {
	if runF == nil {
		runF = doctorRun
	}
	return &cli.Command{
		Name:  "doctor",
		Usage: "check git, API keys, base URLs, the session store and trust, each with a fix",
		Description: `Checks what decode needs and prints one line per check:

   ok    what was found
   warn  what may be wrong — fix: what to do
   fail  what is wrong — fix: what to do

API keys are named, never shown. Exits 1 when a check fails.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "check for `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			return runF(c.Context, &DoctorOptions{F: f, Dir: c.String("dir")})
		},
	}
}

// check is one line of decode doctor.
type check struct {
	status string // ok, warn, fail
	what   string
	fix    string
}

func doctorRun(ctx context.Context, o *DoctorOptions) error {
	f := o.F
	dir, err := f.workDir(o.Dir)
	if err != nil {
		return err
	}
	root := repoRoot(dir)
	checks := []check{gitCheck(ctx)}
	cfg, cfgChecks := configChecks(f, root)
	checks = append(checks, cfgChecks...)
	checks = append(checks, modelCheck(f, cfg), keysCheck(f, cfg))
	checks = append(checks, baseURLChecks(f, cfg)...)
	checks = append(checks, storeCheck(f, dir), trustCheck(f, root), sandboxCheck(ctx, f))
	failed := 0
	for _, c := range checks {
		line := fmt.Sprintf("%-5s %s", c.status, c.what)
		if c.fix != "" {
			line += " — fix: " + c.fix
		}
		fmt.Fprintln(f.IO.Out, line)
		if c.status == "fail" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}

// minGitMajor and minGitMinor name the oldest git decode is tested
// against (worktrees, core.hooksPath, rev-parse --git-path).
const minGitMajor, minGitMinor = 2, 20

func gitCheck(ctx context.Context) check {
	out, err := exec.CommandContext(ctx, "git", "--version").Output()
	if err != nil {
		return check{"fail", "git not found (" + firstLineOf(err.Error()) + ")", "install git 2.20 or newer and put it on PATH"}
	}
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "git version "))
	major, minor := gitVersion(v)
	if major < minGitMajor || major == minGitMajor && minor < minGitMinor {
		return check{"warn", "git " + v + " is older than 2.20", "upgrade git"}
	}
	return check{"ok", "git " + v, ""}
}

// gitVersion reads "2.39.5" (or "2.39.5.windows.1") as 2, 39.
func gitVersion(v string) (int, int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	return major, minor
}

func configChecks(f *Factory, root string) (Config, []check) {
	cfg, warnings, err := f.loadConfig(root)
	if err != nil {
		return cfg, []check{{"fail", "config: " + firstLineOf(err.Error()), "correct the file it names"}}
	}
	var out []check
	for _, w := range warnings {
		out = append(out, check{"warn", "config: " + w, "see decode trust"})
	}
	if len(out) == 0 {
		out = append(out, check{"ok", "config read (" + filepath.Join(f.configDir(), "config.toml") + " and .decode/config.toml where present)", ""})
	}
	return cfg, out
}

func modelCheck(f *Factory, cfg Config) check {
	name, from := cfg.Model, "config or DECODE_MODEL"
	if name == "" {
		n, key, err := f.defaultModel()
		if err != nil {
			return check{"fail", "no model configured and no API key set", "export one of the API keys (see below), or set model in " + filepath.Join(f.configDir(), "config.toml")}
		}
		name, from = n, key+", which is set"
	}
	p, _, err := providers.Split(name)
	if err != nil {
		return check{"fail", "model " + name + ": " + err.Error(), "write the model as PROVIDER:MODEL"}
	}
	if prov, ok := providers.Find(p); ok {
		if _, err := f.apiKey(prov, cfg.Providers[p]); err != nil {
			return check{"fail", "model " + name + " (from " + from + "): " + err.Error(), "export the key, or choose another model with -m"}
		}
	}
	return check{"ok", "model " + name + " (from " + from + ")", ""}
}

// keysCheck names the API key variables that are set, never their values.
func keysCheck(f *Factory, cfg Config) check {
	var set, all []string
	for _, p := range providers.All() {
		vars := p.KeyEnv
		if pc := cfg.Providers[p.Name]; pc.APIKeyEnv != "" {
			vars = []string{pc.APIKeyEnv}
		}
		for _, k := range vars {
			all = append(all, k)
			if f.Getenv(k) != "" {
				set = append(set, k)
			}
		}
	}
	if len(set) == 0 {
		return check{"warn", "no API key set", "export one of " + strings.Join(all, ", ") + " (or use a local model: -m ollama:MODEL, -m script:FILE)"}
	}
	return check{"ok", "API keys set: " + strings.Join(set, ", "), ""}
}

// baseURLChecks checks every endpoint that is not a provider's default.
func baseURLChecks(f *Factory, cfg Config) []check {
	var out []check
	seen := map[string]bool{}
	for _, p := range providers.All() {
		src, raw := p.BaseEnv, f.Getenv(p.BaseEnv)
		if p.HostEnv != "" && f.Getenv(p.HostEnv) != "" {
			raw, src = p.Endpoint(f.Getenv, providers.Settings{})
		}
		if raw == "" {
			src, raw = "providers."+p.Name+".base_url", cfg.Providers[p.Name].BaseURL
		}
		if raw == "" || seen[src] {
			continue
		}
		seen[src] = true
		out = append(out, baseURLCheck(p.Name, src, raw))
	}
	if len(out) == 0 {
		out = append(out, check{"ok", "base URLs: the providers' defaults", ""})
	}
	return out
}

func baseURLCheck(provider, src, raw string) check {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return check{"fail", src + " is not an http(s) URL", "set it like https://host/v1"}
	}
	if u.User != nil {
		u.User = url.User("REDACTED") // a password in a URL is a secret too
	}
	shown := src + " " + u.String()
	openAILike := provider != "anthropic" && provider != "gemini"
	if openAILike && !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return check{"warn", shown + " does not end in /v1", "OpenAI-compatible servers usually serve under /v1; add it unless yours does not"}
	}
	return check{"ok", shown, ""}
}

// storeCheck says where sessions go and whether decode can write there.
func storeCheck(f *Factory, dir string) check {
	st, err := f.storeAt(dir)
	if err != nil {
		return check{"fail", "session store: " + firstLineOf(err.Error()), "set DECODE_STORE to a writable directory"}
	}
	where := "bare store " + st.GitDir()
	if filepath.Base(st.GitDir()) == ".git" {
		where = "the repository's git dir " + st.GitDir()
	}
	tmp, err := os.CreateTemp(st.GitDir(), ".decode-doctor-*")
	if err != nil {
		return check{"fail", "sessions go to " + where + ", which is not writable", "fix its permissions, or set DECODE_STORE outside a repository"}
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return check{"ok", "sessions go to " + where + " (writable)", ""}
}

// trustCheck reports whether the repository's own config is trusted.
func trustCheck(f *Factory, root string) check {
	if root == "" {
		return check{"ok", "trust: not in a repository", ""}
	}
	path := filepath.Join(root, ".decode", "config.toml")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return check{"ok", "trust: no repository config (.decode/config.toml)", ""}
	}
	if f.trusts(root, path) {
		return check{"ok", "trust: " + path + " is trusted as it is", ""}
	}
	return check{"warn", "trust: " + path + " is not trusted: its hooks, allow rules, mode and providers are ignored", "read it, then run decode trust"}
}
