package commands

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent"
	"decode/session"
)

func TestTrustStore(t *testing.T) {
	ts := trustStore{path: filepath.Join(t.TempDir(), "decode", "trusted")}
	root := t.TempDir()
	cfg := []byte("[hooks]\nrun_start = \"x\"\n")
	assert.False(t, ts.trusted(root, cfg))
	require.NoError(t, ts.set(canonicalPath(root), configHash(cfg)))
	assert.True(t, ts.trusted(root, cfg))
	assert.False(t, ts.trusted(root, append(cfg, '#')), "a changed config is not trusted")
	assert.False(t, ts.trusted(t.TempDir(), cfg), "trust is per repository")

	other := t.TempDir()
	require.NoError(t, ts.set(canonicalPath(other), configHash(cfg)))
	list, err := ts.load()
	require.NoError(t, err)
	assert.Len(t, list, 2)
	require.NoError(t, ts.set(canonicalPath(root), ""))
	assert.False(t, ts.trusted(root, cfg), "revoked")
	assert.True(t, ts.trusted(other, cfg))
}

func TestHooksConfigAcceptsStringOrList(t *testing.T) {
	var c Config
	_, err := toml.Decode("[hooks]\nrun_start = \"a\"\nbefore_tool = [\"b\", \"c\"]\ntimeout = \"5s\"\n", &c)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{agent.HookRunStart: {"a"}, agent.HookBeforeTool: {"b", "c"}}, c.Hooks.commands())
	d, err := c.Hooks.timeout()
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, d)

	_, err = toml.Decode("[hooks]\nrun_end = 3\n", &c)
	assert.Error(t, err)
	c.Hooks.Timeout = "soon"
	_, err = c.Hooks.timeout()
	assert.Error(t, err)
}

func TestRepositoryConfigNeedsTrust(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".decode"), 0o755))
	path := filepath.Join(repo, ".decode", "config.toml")
	require.NoError(t, os.WriteFile(path, []byte("allow = [\"bash(*)\"]\nmode = \"edit\"\ndeny = [\"bash(rm *)\"]\n[hooks]\nbefore_tool = \"check\"\n"), 0o644))
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config")}
	f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getenv: func(k string) string { return env[k] }}

	c, warnings, err := f.loadConfig(repo)
	require.NoError(t, err)
	assert.Empty(t, c.Allow)
	assert.Empty(t, c.Mode)
	assert.Empty(t, c.Hooks.commands())
	assert.Equal(t, []string{"bash(rm *)"}, c.Deny, "what narrows permissions needs no trust")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "decode trust")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, trustStore{path: filepath.Join(f.configDir(), "trusted")}.set(canonicalPath(repo), configHash(data)))
	c, warnings, err = f.loadConfig(repo)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"bash(*)"}, c.Allow)
	assert.Equal(t, "edit", c.Mode)
	assert.Equal(t, map[string][]string{agent.HookBeforeTool: {"check"}}, c.Hooks.commands())
}

func TestDecisionTargets(t *testing.T) {
	w := func(id, kind string, decided bool) agent.Waiting {
		x := agent.Waiting{Request: session.ApprovalRequestData{CallID: id, Name: "bash", Kind: kind}}
		if decided {
			x.Decision = &session.ApprovalData{CallID: id}
		}
		return x
	}
	pending := []agent.Waiting{w("c1", session.WaitApproval, false), w("c2", session.WaitApproval, true), w("q1", session.WaitQuestion, false)}
	ids := func(ws []agent.Waiting) []string {
		var out []string
		for _, x := range ws {
			out = append(out, x.Request.CallID)
		}
		return out
	}
	cases := []struct {
		decision string
		args     []string
		ids      []string
		text     string
		err      string
	}{
		{decisionAllow, nil, []string{"c1"}, "", ""},
		{decisionAllow, []string{"c2"}, []string{"c2"}, "", ""},
		{decisionAllow, []string{"zz"}, nil, "", "no call zz waits for approval (waiting: c1, c2)"},
		{decisionDeny, []string{"use", "git rm"}, []string{"c1"}, "use git rm", ""},
		{decisionDeny, []string{"c2", "not now"}, []string{"c2"}, "not now", ""},
		{decisionAnswer, []string{"yes"}, []string{"q1"}, "yes", ""},
		{decisionAnswer, []string{"q1", "yes", "v2"}, []string{"q1"}, "yes v2", ""},
	}
	for _, c := range cases {
		got, text, err := decisionTargets(pending, &DecideOptions{Decision: c.decision, Args: c.args})
		if c.err != "" {
			assert.EqualError(t, err, c.err, "%s %v", c.decision, c.args)
			continue
		}
		require.NoError(t, err, "%s %v", c.decision, c.args)
		assert.Equal(t, c.ids, ids(got), "%s %v", c.decision, c.args)
		assert.Equal(t, c.text, text, "%s %v", c.decision, c.args)
	}
	_, _, err := decisionTargets(nil, &DecideOptions{Decision: decisionAllow})
	assert.EqualError(t, err, "nothing waits for approval")
}
