package commands

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallTmpfs mounts a tmpfs of size at a new directory, or skips the test
// saying why (it needs root and a kernel that lets it mount).
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// leftovers lists the temporary files decode may create in a git dir.
func leftovers(t *testing.T, gitDir string) []string {
	var out []string
	filepath.Walk(gitDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && (strings.HasPrefix(fi.Name(), "tmp_obj_") || strings.HasSuffix(fi.Name(), ".tmp") || strings.HasSuffix(fi.Name(), ".lock")) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestDiskFullAndReadOnlyStore runs decode on a small tmpfs. A tool fills
// the disk: the next append fails, the run stops with exit 1 before the
// next tool, naming the cause and what to do, and leaves no temporary
// file. A disk full from the start fails the same way. Once space is
// freed, resume finishes the task, each side effect having run once. A
// store remounted read-only says so, and works again once writable.
func TestDiskFullAndReadOnlyStore(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "TestMain puts decode on PATH")
	dir := smallTmpfs(t, "2m")
	env := crashEnv(dir)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		}
		require.NoError(t, err)
		return 0, out.String()
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".home"), 0o755))
	git("init", "-q")
	script := `{"responses": [
  {"calls": [{"name": "bash", "args": {"command": "echo one >> ledger.txt; cat /dev/zero > fill 2>/dev/null; true"}}]},
  {"calls": [{"name": "bash", "args": {"command": "echo two >> ledger.txt"}}]},
  {"text": "Done."}
]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("fill\nledger.txt\nscript.json\n.home/\n"), 0o644))

	code, out := run("run", "--mode", "bypass", "-m", "script:script.json", "fill the disk")
	assert.Equal(t, ExitError, code, out)
	assert.Contains(t, out, "no space left on device; free some space")
	assert.Contains(t, out, "then run decode resume")
	ledger, _ := os.ReadFile(filepath.Join(dir, "ledger.txt"))
	assert.Equal(t, "one\n", string(ledger), "the second tool did not run")
	assert.Empty(t, leftovers(t, filepath.Join(dir, ".git")), "no temporary file is left")

	// Full from the start: a new run cannot even take its lock.
	code, out = run("run", "--mode", "bypass", "-m", "script:script.json", "another")
	assert.Equal(t, ExitError, code, out)
	assert.Contains(t, out, "no space left on device")
	assert.NotContains(t, out, "being written by another")
	assert.Empty(t, leftovers(t, filepath.Join(dir, ".git")), "no temporary file is left")

	require.NoError(t, os.Remove(filepath.Join(dir, "fill")))
	code, out = run("resume", "--mode", "bypass", "@")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Done.")
	ledger, _ = os.ReadFile(filepath.Join(dir, "ledger.txt"))
	assert.Equal(t, "one\ntwo\n", string(ledger), "each side effect ran once")
	code, out = run("log", "--check")
	assert.Equal(t, 0, code, out)

	// Read-only: the error says so, and resume works once writable again.
	if o, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only: %v: %s", err, o)
	}
	code, out = run("resume", "--mode", "bypass", "@", "and again")
	assert.Equal(t, ExitError, code, out)
	assert.Contains(t, out, "read-only file system; remount it read-write")
	assert.NotContains(t, out, "being written by another")
	require.NoError(t, exec.Command("mount", "-o", "remount,rw", dir).Run())
	script2 := `{"responses": [{"text": "Again."}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.json"), []byte(strings.Replace(script, `{"text": "Done."}`, `{"text": "Done."}, `+script2[15:len(script2)-2], 1)), 0o644))
	code, out = run("resume", "--mode", "bypass", "@", "and again")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "Again.")
	git("fsck", "--strict", "--no-dangling")
}
