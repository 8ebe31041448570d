package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGateExtraRoots checks --add-dir: an extra root is inside the
// workspace for edits, as the root is, with the same protections.
func TestGateExtraRoots(t *testing.T) {
	root, extra, outside := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(extra, ".git", "hooks"), 0o755))
	require.NoError(t, os.Symlink(extra, filepath.Join(root, "extralink")))
	require.NoError(t, os.Symlink(outside, filepath.Join(extra, "out")))
	outsideEdit := outcome{Ask, Deny, Ask, Allow}
	redirectIn := outcome{Allow, Deny, Allow, Allow}
	x := func(p string) string { return filepath.Join(extra, p) }
	cases := []struct {
		tool, arg     string
		with, without outcome
	}{
		{"write", x("a.go"), fileEdit, outsideEdit},
		{"edit", x("pkg/b.go"), fileEdit, outsideEdit},
		{"multi_edit", x("b.go"), fileEdit, outsideEdit},
		{"write", "extralink/a.go", fileEdit, outsideEdit},
		{"write", x(".git/hooks/pre-commit"), denyAll, denyAll},
		{"write", "extralink/.git/config", denyAll, denyAll},
		{"write", x("out/f"), outsideEdit, outsideEdit},
		{"write", x("../f"), outsideEdit, outsideEdit},
		{"write", filepath.Join(outside, "f"), outsideEdit, outsideEdit},
		{"bash", "> " + shq(x("log.txt")), redirectIn, outsideEdit},
		{"bash", "go test ./... > " + shq(x("log.txt")), unruled, unruled},
		{"bash", "tee " + shq(x(".git/hooks/pre-commit")) + " < y", denyAll, denyAll},
		{"bash", "sort -o " + shq(x(".git/hooks/pre-commit")) + " y", denyAll, denyAll},
	}
	for mi, mode := range corpusModes {
		with, err := NewGate(GateConfig{Mode: mode, Root: root, ExtraRoots: []string{extra}})
		require.NoError(t, err)
		without, err := NewGate(GateConfig{Mode: mode, Root: root})
		require.NoError(t, err)
		for _, c := range cases {
			key := "path"
			if c.tool == "bash" {
				key = "command"
			}
			args, _ := json.Marshal(map[string]string{key: c.arg})
			v := with.Check(c.tool, false, args)
			assert.Equal(t, c.with[mi], v.Decision, "with --add-dir, %s %s(%s): %s", mode, c.tool, c.arg, v.Reason)
			v = without.Check(c.tool, false, args)
			assert.Equal(t, c.without[mi], v.Decision, "without --add-dir, %s %s(%s): %s", mode, c.tool, c.arg, v.Reason)
		}
	}
	_, err := NewGate(GateConfig{Root: root, ExtraRoots: []string{"rel/dir"}})
	assert.ErrorContains(t, err, "rel/dir")

	// Absolute path rules reach into an extra root; relative ones stay in the root.
	g, err := NewGate(GateConfig{Root: root, ExtraRoots: []string{extra}, Allow: []string{"edit(" + filepath.ToSlash(extra) + "/docs/**)", "edit(docs/**)"}})
	require.NoError(t, err)
	assert.Equal(t, Allow, gateCheck(t, g, "write", false, `{"path":"`+x("docs/a.md")+`"}`).Decision)
	assert.Equal(t, Ask, gateCheck(t, g, "write", false, `{"path":"`+x("src/a.go")+`"}`).Decision)
}

// TestGateShellDirs checks that relative paths in a command are placed
// where the command runs: after a cd in the line, and in the directory the
// bash tool kept from its last call.
func TestGateShellDirs(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	bashDir := root
	for _, c := range []struct {
		mode Mode
		dir  string
		cmd  string
		want Decision
	}{
		{ModeEdit, root, "cd sub && go test ./... > out.txt", Allow},
		{ModeEdit, root, "cd .. && go test ./... > out.txt", Ask},
		{ModeEdit, root, "cd " + outside + " && go test ./... > out.txt", Ask},
		{ModeEdit, root, "cd \"$d\" && go test ./... > out.txt", Ask},
		{ModeBypass, root, "cd \"$d\" && go test ./... > out.txt", Ask},
		{ModeBypass, root, "cd \"$d\" && go test ./... > /tmp/out.txt", Allow},
		{ModeBypass, root, "cd .git && go test ./... > hooks/pre-commit", Deny},
		{ModeEdit, filepath.Join(root, "sub"), "go test ./... > out.txt", Allow},
		{ModeEdit, outside, "go test ./... > out.txt", Ask},
		{ModeBypass, filepath.Join(root, ".git"), "go test ./... > hooks/pre-commit", Deny},
		{ModeBypass, filepath.Join(root, ".git"), "tee hooks/pre-commit < x", Deny},
		{ModeBypass, filepath.Join(root, ".git", "hooks"), "cp /tmp/evil pre-commit", Deny},
		{ModeBypass, filepath.Join(root, "sub"), "cp x ../.git/hooks/pre-commit", Deny},
		{ModeEdit, filepath.Join(root, "sub"), "cd .. && go test ./... > out.txt", Allow},
	} {
		bashDir = c.dir
		g, err := NewGate(GateConfig{Mode: c.mode, Root: root, Allow: []string{"bash(cd *)", "bash(go test *)", "bash(tee *)", "bash(cp *)"},
			BashDir: func() string { return bashDir }})
		require.NoError(t, err)
		args, _ := json.Marshal(map[string]string{"command": c.cmd})
		v := g.Check("bash", false, args)
		assert.Equal(t, c.want, v.Decision, "%s in %s: %s: %s", c.mode, c.dir, c.cmd, v.Reason)
	}
}

// TestGateProtectedWrites checks that no mode writes into .git or .decode
// without an allow rule naming it, for the file tools and bash alike, and
// that such a rule is enough.
func TestGateProtectedWrites(t *testing.T) {
	root := t.TempDir()
	for _, mode := range corpusModes {
		g, err := NewGate(GateConfig{Mode: mode, Root: root})
		require.NoError(t, err)
		for _, c := range []struct{ tool, args string }{
			{"write", `{"path":".git/hooks/pre-commit","content":"x"}`},
			{"edit", `{"path":".git/config","old_string":"a","new_string":"b"}`},
			{"multi_edit", `{"path":".decode/config.toml","edits":[]}`},
			{"bash", `{"command":"tee .git/hooks/pre-commit < x"}`},
			{"bash", `{"command":"sort -o .git/hooks/pre-commit x"}`},
			{"bash", `{"command":"cp x .decode/config.toml"}`},
		} {
			v := gateCheck(t, g, c.tool, false, c.args)
			assert.Equal(t, Deny, v.Decision, "%s %s %s", mode, c.tool, c.args)
		}

		lifted, err := NewGate(GateConfig{Mode: mode, Root: root,
			Allow: []string{"edit(.git/info/**)", "bash(tee .git/info/exclude)", "bash(sort -o .git/info/exclude *)"},
			Deny:  []string{"edit(.git/info/attributes)"}})
		require.NoError(t, err)
		for args, want := range map[string]Decision{
			`{"path":".git/info/exclude","content":"x"}`:     Allow,
			`{"path":".git/info/attributes","content":"x"}`:  Deny,
			`{"path":".git/hooks/pre-commit","content":"x"}`: Deny,
		} {
			v := gateCheck(t, lifted, "write", false, args)
			assert.Equal(t, want, v.Decision, "%s write %s: %s", mode, args, v.Reason)
		}
		for cmd, want := range map[string]Decision{
			"tee .git/info/exclude":            Allow,
			"sort -o .git/info/exclude ignore": Allow,
			"tee .git/hooks/pre-commit":        Deny,
			"tee .git/info/attributes":         Deny,
		} {
			args, _ := json.Marshal(map[string]string{"command": cmd})
			v := lifted.Check("bash", false, args)
			assert.Equal(t, want, v.Decision, "%s bash %s: %s", mode, cmd, v.Reason)
		}
	}
}

// TestGateWriterTargets checks what the files a command names as targets
// do to its verdict once a rule allows the command: edit mode lets it write
// inside the workspace, plan mode does not write at all.
func TestGateWriterTargets(t *testing.T) {
	root := t.TempDir()
	allowRules := []string{"bash(go test *)", "bash(tee *)", "bash(grep *)", "bash(sort *)", "bash(cp *)", "bash(mkdir *)"}
	for cmd, want := range map[string][2]Decision{ // edit, plan
		"go test ./... | tee >(grep FAIL)":   {Allow, Allow},
		"go test ./... | tee log.txt":        {Allow, Deny},
		"go test ./... | tee >(grep FAIL)x":  {Ask, Deny},
		"sort -o out.txt x":                  {Allow, Deny},
		"sort -k 2 x":                        {Allow, Allow},
		"cp a b":                             {Allow, Deny},
		"cp a ../b":                          {Ask, Deny},
		"cp a \"$x\"":                        {Ask, Deny},
		"mkdir -p build/out":                 {Allow, Deny},
		"cp -t /tmp a":                       {Ask, Deny},
		"go test ./... | tee -a /dev/stderr": {Allow, Allow},
	} {
		for i, mode := range []Mode{ModeEdit, ModePlan} {
			g, err := NewGate(GateConfig{Mode: mode, Root: root, Allow: allowRules})
			require.NoError(t, err)
			args, _ := json.Marshal(map[string]string{"command": cmd})
			v := g.Check("bash", false, args)
			assert.Equal(t, want[i], v.Decision, "%s: %s: %s", mode, cmd, v.Reason)
		}
	}
}
