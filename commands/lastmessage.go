package commands

import (
	"crypto/rand"
	"encoding/hex"
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

// writeLastMessage writes a run's final answer to path atomically: into a
// new file beside it, then renamed over it, so a reader never sees half an
// answer and a failed write leaves what was there. A new file gets the
// mode a shell redirection would give it (0666 less the umask); an
// existing one keeps its mode.
func writeLastMessage(path, text string) error {
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".decode-"+hex.EncodeToString(b[:]))
	mode := fs.FileMode(0o666)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err == nil && mode != 0o666 {
		err = f.Chmod(mode) // the umask applied at creation
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write --output-last-message %s: %w", path, err)
	}
	return nil
}
