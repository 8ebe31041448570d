package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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
}

// NewFactory returns a Factory over the real process.
func NewFactory(version string) *Factory {
	return &Factory{
		Version: version,
		IO:      SystemIO(),
		Getenv:  os.Getenv,
		Environ: os.Environ,
		Getwd:   os.Getwd,
	}
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

// storeAt opens the session store for the working directory dir.
func (f *Factory) storeAt(dir string) (*session.Store, error) {
	st, err := session.OpenStore(dir, session.Env{Getenv: f.Getenv, Home: f.home()})
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	return st, nil
}

// workDir resolves -C against the starting directory.
func (f *Factory) workDir(dir string) (string, error) {
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
