package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkLastMessage checks --output-last-message before anything runs: the
// file's directory must exist and the path must not be a directory, so a
// typo costs no model request. The path is relative to the working
// directory (after -C), like every path decode takes; "-" is a file
// named "-", not stdout.
func (o *AgentOptions) checkLastMessage() error {
	if o.OutputLastMessage == "" {
		return nil
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	path := absPath(dir, o.OutputLastMessage)
	parent := filepath.Dir(path)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("--output-last-message %s: the directory %s does not exist; create it first (mkdir -p %s)", o.OutputLastMessage, parent, parent)
	case err != nil:
		return usageErrorf("--output-last-message %s: %v", o.OutputLastMessage, err)
	case !fi.IsDir():
		return usageErrorf("--output-last-message %s: %s is not a directory", o.OutputLastMessage, parent)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usageErrorf("--output-last-message %s is a directory; give the path of a file", o.OutputLastMessage)
	}
	o.lastMessage = path
	return nil
}

// writeLastMessage writes a run's final answer to path atomically (see
// writeFileAtomic): a new file gets the mode a shell redirection would
// give it, an existing one keeps its mode.
func writeLastMessage(path, text string) error {
	if err := writeFileAtomic(path, []byte(text), 0o666); err != nil {
		return fmt.Errorf("write --output-last-message %s: %w", path, err)
	}
	return nil
}
