package commands

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"decode/agent/llm"
	"decode/secrets"
	"decode/session"
)

// Factory builds what commands share (streams, environment, config, store,
// model) in one place. Commands resolve only what they use, so `decode
// --version` or `decode log` never build a model client.
type Factory struct {
	Version string
	// Commit and Date are the build's source commit and time, set with
	// -ldflags; empty, --version falls back to the VCS stamp Go records.
	Commit, Date string
	IO           *IOStreams
	// Getenv and Environ are the process environment; tests pass their own.
	Getenv  func(string) string
	Environ func() []string
	// Getwd is the starting directory (before -C).
	Getwd func() (string, error)
	// Dir is -C given before the command (decode -C DIR log); a command's
	// own -C wins.
	Dir string
	// Secrets is the one redactor of every exit (stdout, stderr, sessions,
	// spill files, hook input, model requests); made on first use.
	Secrets *secrets.Redactor
	// Unredacted is stderr before the redactor (set by Main), for the one
	// secret decode prints on purpose: decode serve's access URL.
	Unredacted io.Writer
	// Keys is the key store decode auth login writes to; nil means the
	// OS key store's backends (secrets.OpenKeyStores), opened on first use.
	Keys     secrets.KeyStore
	keysOnce bool
	keysWhy  []string
	// SoftStop, when set (by Main), makes the first SIGINT/SIGTERM a stop at
	// the agent loop's next step boundary and returns the channel that
	// signal closes; the second signal cancels the command's context.
	SoftStop func() <-chan struct{}
	// Prompting, when set (by Main), marks an approval prompt open until the
	// function it returns is called: a signal then cancels at once.
	Prompting func() func()
	// NoticeTo, when set (by Main), takes the writer a run at a terminal
	// prints its stderr lines through (it clears the spinner's line
	// first): the first signal's "stopping after the current step" goes
	// there, not over the spinner.
	NoticeTo func(io.Writer)

	// The shared things a command builds, in the shape of gh's factory:
	// each is a function a test may replace (a fake store, a scripted
	// model) while keeping the others; nil means decode's own, reached
	// through workDir, loadConfig, storeAt and newModel.
	//
	// WorkDir resolves a command's -C (else the one before the command)
	// against the starting directory.
	WorkDir func(dirFlag string) (string, error)
	// Config is the merged config for a repository root ("" outside
	// one), with its warnings; decode's own reads it once per root.
	Config func(repoRoot string) (Config, []string, error)
	// Store opens the session store of a working directory; decode's own
	// opens it once per directory.
	Store func(dir string) (*session.Store, error)
	// Model builds the model client for a name ("" picks one by the keys
	// set). It is built afresh for each run: a client holds a run's state
	// (a scripted model its place in the script).
	Model func(ctx context.Context, name string, cfg Config) (llm.Model, error)
	// memo holds what decode's own Config and Store built, shared by
	// copies of the factory; nil (a Factory literal) builds every time.
	memo *factoryMemo
}

// factoryMemo remembers configs by repository root and stores by directory.
type factoryMemo struct {
	mu      sync.Mutex
	configs map[string]memoConfig
	stores  map[string]*session.Store
}

type memoConfig struct {
	cfg      Config
	warnings []string
}

func newFactoryMemo() *factoryMemo {
	return &factoryMemo{configs: map[string]memoConfig{}, stores: map[string]*session.Store{}}
}

// NewFactory returns a Factory over the real process.
func NewFactory(version string) *Factory {
	return &Factory{
		Version: version,
		IO:      SystemIO(),
		Getenv:  os.Getenv,
		Environ: os.Environ,
		Getwd:   os.Getwd,
		memo:    newFactoryMemo(),
	}
}

// workDir resolves -C: Factory.WorkDir, else resolveDir.
func (f *Factory) workDir(dirFlag string) (string, error) {
	if f.WorkDir != nil {
		return f.WorkDir(dirFlag)
	}
	return f.resolveDir(dirFlag)
}

// loadConfig is the config for a repository root: Factory.Config, else
// readConfig, read once per root. Each caller gets its own copy of the
// lists and tables, so that what one command adds (the servers of a
// .mcp.json) is not seen by the next.
func (f *Factory) loadConfig(repoRoot string) (Config, []string, error) {
	if f.Config != nil {
		return f.Config(repoRoot)
	}
	if f.memo == nil {
		return f.readConfig(repoRoot)
	}
	f.memo.mu.Lock()
	defer f.memo.mu.Unlock()
	if m, ok := f.memo.configs[repoRoot]; ok {
		return m.cfg.clone(), slices.Clone(m.warnings), nil
	}
	cfg, warnings, err := f.readConfig(repoRoot)
	if err != nil {
		return cfg, warnings, err
	}
	f.memo.configs[repoRoot] = memoConfig{cfg.clone(), slices.Clone(warnings)}
	return cfg, warnings, nil
}

// clone copies c's lists and tables (their values are copied as values).
func (c Config) clone() Config {
	c.unknown, c.files = slices.Clone(c.unknown), slices.Clone(c.files)
	c.Allow, c.Deny, c.SecretEnv = slices.Clone(c.Allow), slices.Clone(c.Deny), slices.Clone(c.SecretEnv)
	c.Providers, c.Models, c.MCPServers = maps.Clone(c.Providers), maps.Clone(c.Models), maps.Clone(c.MCPServers)
	return c
}

// newModel builds a run's model client: Factory.Model, else buildModel.
func (f *Factory) newModel(ctx context.Context, name string, cfg Config) (llm.Model, error) {
	if f.Model != nil {
		return f.Model(ctx, name, cfg)
	}
	return f.buildModel(ctx, name, cfg)
}

// home is the user's home directory from the factory's environment.
func (f *Factory) home() string {
	if h := f.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// configDir is $XDG_CONFIG_HOME/decode or ~/.config/decode.
func (f *Factory) configDir() string {
	if x := f.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "decode")
	}
	return filepath.Join(f.home(), ".config", "decode")
}

// openStore opens the session store of the directory -C names.
func openStore(f *Factory, dirFlag string) (*session.Store, error) {
	dir, err := f.workDir(dirFlag)
	if err != nil {
		return nil, err
	}
	return f.storeAt(dir)
}

// storeAt is the session store for the working directory dir:
// Factory.Store, else one opened once per directory.
func (f *Factory) storeAt(dir string) (*session.Store, error) {
	if f.Store != nil {
		return f.Store(dir)
	}
	if f.memo == nil {
		return f.openStoreAt(dir)
	}
	f.memo.mu.Lock()
	defer f.memo.mu.Unlock()
	if st, ok := f.memo.stores[dir]; ok {
		return st, nil
	}
	st, err := f.openStoreAt(dir)
	if err != nil {
		return nil, err
	}
	f.memo.stores[dir] = st
	return st, nil
}

// openStoreAt opens the session store for dir as git finds it.
func (f *Factory) openStoreAt(dir string) (*session.Store, error) {
	st, err := session.OpenStore(dir, session.Env{Getenv: f.Getenv, Home: f.home()})
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	return st, nil
}

// resolveDir resolves -C against the starting directory.
func (f *Factory) resolveDir(dir string) (string, error) {
	wd, err := f.Getwd()
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir = f.Dir
	}
	if dir == "" {
		return wd, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", usageErrorf("-C %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return "", usageErrorf("-C %s: not a directory", dir)
	}
	return filepath.Clean(dir), nil
}
