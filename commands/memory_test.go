package commands

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"decode/prompts"
	"decode/tools"
)

// promptHarness is a factory over temp dirs: a repository at repo, the
// user's config under home.
type promptHarness struct {
	f          *Factory
	repo, home string
}

func newPromptHarness(t *testing.T) *promptHarness {
	t.Helper()
	root := t.TempDir()
	h := &promptHarness{repo: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	require.NoError(t, os.MkdirAll(filepath.Join(h.repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(h.home, 0o755))
	env := map[string]string{"HOME": h.home}
	h.f = &Factory{
		Version: "test",
		IO:      &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}},
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string { return nil },
		Getwd:   func() (string, error) { return h.repo, nil },
	}
	return h
}

func (h *promptHarness) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(h.repo, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// build assembles the system prompt and registry as agentSetup does.
func (h *promptHarness) build(t *testing.T, o *AgentOptions) (string, *tools.Registry, error) {
	t.Helper()
	o.F = h.f
	mode, err := tools.ParseMode(gateMode(o, Config{}))
	require.NoError(t, err)
	ws, err := tools.NewWorkspace(h.repo)
	require.NoError(t, err)
	pm := h.f.loadMemory(h.repo, h.repo)
	system, err := h.f.systemPrompt(o, string(mode), h.repo, h.repo, pm)
	return system, h.f.agentTools(o, Config{}, ws, h.repo, mode, pm.skills), err
}

func toolNames(reg *tools.Registry) []string {
	var names []string
	for _, s := range reg.Specs() {
		names = append(names, s.Name)
	}
	return names
}

// TestFirstRequestBudget guards what every request of decode run pays
// before its first message: base.md, run.md and the environment lines,
// plus the schemas of every tool run offers (no memory, no skills), with
// the sandbox on, whose bash schema is the largest. Issue 8 asks for a
// first model request of at most 5,000 bytes while offering at least 8
// tools; the prompt and schemas get 4,500 of them, and the user's message
// and the provider's JSON framing (about 40 bytes a tool with OpenAI) the
// rest. TestFirstRequestOnTheWire measures the whole request as sent. At
// the time of writing they are about 4,360 bytes with eleven tools: a new
// tool or a longer description must pay for itself by trimming elsewhere.
// Peers send 2,300 to 32,000 characters of system prompt alone, before
// their schemas.
func TestFirstRequestBudget(t *testing.T) {
	h := newPromptHarness(t)
	o := &AgentOptions{Command: "run"}
	o.sandbox.bash = &tools.BashSandbox{} // the bash schema then offers the escalation
	system, reg, err := h.build(t, o)
	require.NoError(t, err)
	js, names, err := specsJSON(reg.Specs())
	require.NoError(t, err)
	require.Contains(t, names, "bash", "the run registry is measured")

	total := len(system) + len(js)
	t.Logf("system prompt %d bytes ≈ %d tokens; %d tool schemas (%s) %d bytes ≈ %d tokens; total %d bytes ≈ %d tokens",
		len(system), prompts.EstimateTokens(system), len(names), strings.Join(names, ", "), len(js),
		prompts.EstimateTokens(js), total, prompts.EstimateTokens(system+js))
	assert.LessOrEqual(t, total, 4500, "system prompt + tool schemas of decode run, in bytes")
	assert.GreaterOrEqual(t, len(names), 8, "the budget holds while offering at least 8 tools")
}

func TestSystemPromptFlagsAndMemory(t *testing.T) {
	h := newPromptHarness(t)
	h.write(t, "AGENTS.md", "Use tabs.\n")
	h.write(t, "review.md", "You review diffs tersely.\n")
	h.write(t, "extra.md", "Cite file:line.\n")
	h.write(t, "blank.md", " \n")

	built, _, err := h.build(t, &AgentOptions{Command: "ask", Mode: "plan"})
	require.NoError(t, err)
	assert.Contains(t, built, "You are decode")
	assert.Contains(t, built, "Task: answer the user's question")

	replaced, _, err := h.build(t, &AgentOptions{Command: "ask", Mode: "plan", SystemFile: "review.md"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(replaced, "You review diffs tersely.\n\n"), replaced)
	assert.NotContains(t, replaced, "You are decode", "--system-file replaces base")
	assert.NotContains(t, replaced, "Task: answer", "and the command's part")
	assert.Contains(t, replaced, "Use tabs.", "memory stays")
	assert.Contains(t, replaced, "Environment:\n", "the environment stays")

	both, _, err := h.build(t, &AgentOptions{Command: "run", SystemFile: filepath.Join(h.repo, "review.md"), AppendSystemFile: "extra.md"})
	require.NoError(t, err)
	assert.Less(t, strings.Index(both, "You review"), strings.Index(both, "Cite file:line."))
	assert.Less(t, strings.Index(both, "Cite file:line."), strings.Index(both, "Use tabs."), "appended text comes before memory")

	for _, o := range []*AgentOptions{
		{Command: "run", SystemFile: "missing.md"},
		{Command: "run", AppendSystemFile: "missing.md"},
		{Command: "run", SystemFile: "blank.md"},
	} {
		_, _, err := h.build(t, o)
		var ue *UsageError
		assert.ErrorAs(t, err, &ue, "%+v", o)
	}
}

func TestSkillToolOnlyWithSkills(t *testing.T) {
	h := newPromptHarness(t)
	system, reg, err := h.build(t, &AgentOptions{Command: "run"})
	require.NoError(t, err)
	assert.NotContains(t, toolNames(reg), "skill")
	assert.NotContains(t, system, "Skills (load")

	h.write(t, ".decode/skills/release/SKILL.md", "---\nname: release\ndescription: Cut a release.\n---\nTag it.\n")
	userSkill := filepath.Join(h.home, ".config", "decode", "skills", "lint", "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(userSkill), 0o755))
	require.NoError(t, os.WriteFile(userSkill, []byte("---\nname: lint\ndescription: Lint.\n---\nRun the linter.\n"), 0o644))

	for _, command := range []string{"run", "ask"} {
		system, reg, err = h.build(t, &AgentOptions{Command: command, Mode: map[string]string{"ask": "plan"}[command]})
		require.NoError(t, err)
		assert.Contains(t, toolNames(reg), "skill", "%s offers the skill tool: it is read-only", command)
		assert.Contains(t, system, "- release (untrusted: from this repository, not from the user): Cut a release.\n- lint: Lint.\n", "repository skills first")
		assert.NotContains(t, system, "Tag it.", "a skill's text is not in the prompt")
	}
	tool, ok := reg.Get("skill")
	require.True(t, ok)
	res, err := tool.Run(t.Context(), json.RawMessage(`{"name":"lint"}`))
	require.NoError(t, err)
	assert.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "Run the linter.")
	assert.Contains(t, res.Content, filepath.Dir(userSkill), "the model learns the skill's folder")
}

func TestCommandLinesToOptions(t *testing.T) {
	var gotAgent *AgentOptions
	var gotMemory *MemoryOptions
	f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
	captureAgent := func(_ *cli.Context, o *AgentOptions) error { gotAgent = o; return nil }
	captureMemory := func(_ *cli.Context, o *MemoryOptions) error { gotMemory = o; return nil }
	app := NewApp(f)
	for i, c := range app.Commands {
		switch c.Name {
		case "run":
			app.Commands[i] = NewCmdRun(f, captureAgent)
		case "plan":
			app.Commands[i] = NewCmdPlan(f, captureAgent)
		case "memory":
			app.Commands[i] = NewCmdMemory(f, captureMemory)
		}
	}
	run := func(args ...string) error {
		gotAgent, gotMemory = nil, nil
		return app.Run(permuteArgs(app, append([]string{"decode"}, args...)))
	}

	require.NoError(t, run("plan", "add retries", "--system-file", "s.md", "-m", "script:x.json"))
	assert.Equal(t, "plan", gotAgent.Command)
	assert.Equal(t, "plan", gotAgent.Mode, "plan is read-only")
	assert.Equal(t, "add retries", gotAgent.Prompt)
	assert.Equal(t, "s.md", gotAgent.SystemFile)

	require.NoError(t, run("run", "--plan", "@", "--remember", "--append-system-file", "a.md"))
	assert.Equal(t, "@", gotAgent.Plan)
	assert.True(t, gotAgent.Remember)
	assert.Equal(t, "a.md", gotAgent.AppendSystemFile)
	assert.Empty(t, gotAgent.Prompt)

	require.NoError(t, run("run", "--plan-file", "plan.md"))
	assert.Equal(t, "plan.md", gotAgent.PlanFile)
	assert.False(t, gotAgent.Remember)

	require.NoError(t, run("memory"))
	assert.Equal(t, &MemoryOptions{F: f, Command: "run"}, gotMemory)
	require.NoError(t, run("memory", "--prompt", "ask", "--system-file", "s.md"))
	assert.Equal(t, &MemoryOptions{F: f, Prompt: true, Command: "ask", SystemFile: "s.md"}, gotMemory)

	var ue *UsageError
	assert.ErrorAs(t, run("memory", "ask"), &ue, "a command needs --prompt")
	assert.ErrorAs(t, run("memory", "--prompt", "resume"), &ue)
	assert.ErrorAs(t, run("plan", "--plan", "@", "x"), &ue, "--plan is run's only")
}
