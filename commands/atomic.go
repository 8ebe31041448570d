package commands

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
)

// writeFileAtomic writes data to path through a new file beside it, renamed
// over it, so a reader never sees half a file and a failed write leaves
// what was there (and no temporary file). An existing file keeps its mode;
// a new one gets perm less the umask, as a shell redirection would.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode, keep := perm, false
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode, keep = fi.Mode().Perm(), true
	}
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".decode-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && keep {
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
	}
	return err
}
