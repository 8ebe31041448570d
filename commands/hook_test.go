package commands

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

func TestHookCommandLine(t *testing.T) {
	dir := t.TempDir()
	f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getwd: func() (string, error) { return dir, nil }}
	var got *HookOptions
	app := &cli.App{Name: "decode", ExitErrHandler: func(*cli.Context, error) {}, Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
		Commands: []*cli.Command{NewCmdHook(f, func(_ context.Context, o *HookOptions) error { got = o; return nil })}}

	args := []string{"decode", "hook", "install", "pre-commit", "--prompt", "fail on secrets"}
	require.NoError(t, app.Run(permuteArgs(app, args)))
	require.NotNil(t, got)
	assert.Equal(t, "install", got.Action)
	assert.Equal(t, "pre-commit", got.Name)
	assert.Equal(t, "fail on secrets", got.Prompt, "a flag after the arguments")
	assert.Equal(t, dir, got.Dir)
	assert.NotEmpty(t, got.Decode, "the hook runs this decode")

	err := app.Run([]string{"decode", "hook", "install"})
	var ue *UsageError
	assert.ErrorAs(t, err, &ue, "a name is needed")
}

// TestHookScriptsParse checks every hook script with sh -n, prompts with
// quotes included.
func TestHookScriptsParse(t *testing.T) {
	names := make([]string, 0, len(gitHooks))
	for n := range gitHooks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		h := gitHooks[name]
		script, err := hookScript(name, h.verdict, `don't "trust" $HOME or `+"`this`", "/opt/my decode/bin/decode")
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
		out, err := exec.Command("sh", "-n", path).CombinedOutput()
		assert.NoError(t, err, "%s: sh -n: %s\n%s", name, out, script)
		assert.True(t, isDecodeHook([]byte(script)), "%s carries the marker", name)
		assert.Contains(t, script, `prompt='don'\''t "trust" $HOME or `+"`this`'", "%s quotes the prompt", name)
		assert.Contains(t, script, `decode=${DECODE:-'/opt/my decode/bin/decode'}`)
		assert.Equal(t, h.verdict, bytes.Contains([]byte(script), []byte("--schema")), "%s asks for a verdict iff it checks", name)
	}
}

func TestInstallHookKeepsOthers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pre-commit")
	var out bytes.Buffer

	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	require.NoError(t, os.WriteFile(path+chainSuffix, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	err := installHook(&out, path, "#!/bin/sh\n"+hookMarker+" pre-commit\n")
	require.Error(t, err, "two foreign hooks: nothing is overwritten")
	assert.Contains(t, err.Error(), "move one of them away")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "#!/bin/sh\nexit 0\n", string(b))

	require.NoError(t, os.Remove(path+chainSuffix))
	require.NoError(t, installHook(&out, path, "#!/bin/sh\n"+hookMarker+" pre-commit v1\n"))
	require.NoError(t, installHook(&out, path, "#!/bin/sh\n"+hookMarker+" pre-commit v2\n"))
	assert.Contains(t, out.String(), "(updated)", "a second install replaces decode's own hook")
	b, _ = os.ReadFile(path + chainSuffix)
	assert.Equal(t, "#!/bin/sh\nexit 0\n", string(b), "the chained hook is the original, not decode's first version")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "executable")

	require.NoError(t, uninstallHook(&out, path))
	b, _ = os.ReadFile(path)
	assert.Equal(t, "#!/bin/sh\nexit 0\n", string(b), "uninstall puts the original back")
	assert.NoFileExists(t, path+chainSuffix)
}

func TestVersionLine(t *testing.T) {
	f := &Factory{Version: "v0.1.0", Commit: "58a547e", Date: "2026-11-30T10:00:00Z"}
	line := versionLine(f)
	assert.Regexp(t, `^v0\.1\.0 \(commit 58a547e, built 2026-11-30T10:00:00Z, go1\.\d+`, line)
}
