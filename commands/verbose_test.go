package commands

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"decode/session"
	"decode/tools"
)

func TestDescribeVerdict(t *testing.T) {
	const paused = "the run pauses (exit 3) for decode approve or deny"
	for _, c := range []struct {
		v        tools.Verdict
		readOnly bool
		mode     tools.Mode
		want     string
	}{
		{tools.Verdict{Decision: tools.Allow, Rule: "bash(go test *)"}, false, tools.ModeDefault, "allowed by the rule bash(go test *)"},
		{tools.Verdict{Decision: tools.Allow}, true, tools.ModeDefault, "allowed (read-only)"},
		{tools.Verdict{Decision: tools.Allow}, false, tools.ModeBypass, "allowed (bypass mode)"},
		{tools.Verdict{Decision: tools.Allow}, false, tools.ModeEdit, "allowed (edit mode)"},
		{tools.Verdict{Decision: tools.Allow}, false, tools.ModeDefault, "allowed (read-only: it changes nothing in the workspace)"},
		{tools.Verdict{Decision: tools.Ask, Reason: "write of `x` needs the user's approval"}, false, tools.ModeDefault, "asks (write of `x` needs the user's approval); " + paused},
		{tools.Verdict{Decision: tools.Ask, Reason: "…", Rule: "bash(git push *)"}, false, tools.ModeDefault, "asks by the rule bash(git push *); " + paused},
		{tools.Verdict{Decision: tools.Deny, Reason: "…", Rule: "bash(rm *)"}, false, tools.ModeDefault, "denied by the rule bash(rm *)"},
		{tools.Verdict{Decision: tools.Deny, Reason: "plan mode allows only read-only tools"}, false, tools.ModePlan, "denied: plan mode allows only read-only tools"},
	} {
		assert.Equal(t, c.want, describeVerdict(c.v, c.readOnly, c.mode, paused), "%+v read-only=%v in %s mode", c.v, c.readOnly, c.mode)
	}
}

func TestDescribeSpec(t *testing.T) {
	assert.Equal(t, "model openai:gpt-4.1; mode default", describeSpec(session.RunSpec{Model: "openai:gpt-4.1"}), "an empty mode is the default")
	got := describeSpec(session.RunSpec{
		Model: "script:s.json", Mode: "edit", OnAsk: "deny", Allow: []string{"bash(go test *)"}, Deny: []string{"bash(rm *)", "web_fetch"},
		MaxTurns: 10, Timeout: 20 * time.Minute, AllowNet: true, AllowHosts: []string{"go.dev"},
		SystemFile: &session.FileRef{Path: "/r/sys.md"}, AppendSystemPrompt: "be brief",
	})
	assert.Equal(t, "model script:s.json; mode edit; on-ask deny; allow bash(go test *); deny bash(rm *), web_fetch; max-turns 10; timeout 20m0s; allow-net *, go.dev; system-file /r/sys.md; append-system-prompt (8 bytes)", got,
		"every setting, prompts by size")
}

func TestPermuteArgsVerbose(t *testing.T) {
	app := NewApp(&Factory{IO: &IOStreams{}})
	for _, c := range []struct{ in, want []string }{
		{[]string{"decode", "-v"}, []string{"decode", "-v"}},
		{[]string{"decode", "-v", "run", "task"}, []string{"decode", "run", "-v", "--", "task"}},
		{[]string{"decode", "--verbose", "ask", "q", "-m", "x"}, []string{"decode", "ask", "--verbose", "-m", "x", "--", "q"}},
		{[]string{"decode", "-C", "d", "-v", "ask", "q"}, []string{"decode", "-C", "d", "ask", "-v", "--", "q"}},
		{[]string{"decode", "-v", "nosuch"}, []string{"decode", "-v", "nosuch"}},
	} {
		assert.Equal(t, c.want, permuteArgs(app, c.in), "%q", c.in)
	}
}
