package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGateMCPTools(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		name        string
		mode        Mode
		allow, deny []string
		tool        string
		readOnly    bool
		want        Decision
	}{
		{"asks by default", ModeDefault, nil, nil, "mcp__github__list_issues", false, Ask},
		{"asks in edit mode", ModeEdit, nil, nil, "mcp__github__list_issues", false, Ask},
		{"runs in bypass", ModeBypass, nil, nil, "mcp__github__create_issue", false, Allow},
		{"exact allow", ModeDefault, []string{"mcp__github__list_issues"}, nil, "mcp__github__list_issues", false, Allow},
		{"exact allow is exact", ModeDefault, []string{"mcp__github__list_issues"}, nil, "mcp__github__list_issues_all", false, Ask},
		{"glob allow", ModeDefault, []string{"mcp__github__list_*"}, nil, "mcp__github__list_prs", false, Allow},
		{"glob misses", ModeDefault, []string{"mcp__github__list_*"}, nil, "mcp__github__create_issue", false, Ask},
		{"server allow", ModeEdit, []string{"mcp__github"}, nil, "mcp__github__create_issue", false, Allow},
		{"server allow is that server", ModeEdit, []string{"mcp__github"}, nil, "mcp__githubx__create_issue", false, Ask},
		{"server star", ModeDefault, []string{"mcp__github__*"}, nil, "mcp__github__create_issue", false, Allow},
		{"deny wins", ModeDefault, []string{"mcp__github__*"}, []string{"mcp__github__delete_*"}, "mcp__github__delete_repo", false, Deny},
		{"deny in bypass", ModeBypass, nil, []string{"mcp__github"}, "mcp__github__list_issues", false, Deny},
		{"never in plan", ModePlan, []string{"mcp__github__*"}, nil, "mcp__github__list_issues", false, Deny},
		{"plan with a read-only server", ModePlan, nil, nil, "mcp__docs__search", true, Allow},
		{"read-only server in default", ModeDefault, nil, nil, "mcp__docs__search", true, Allow},
		{"deny beats read-only", ModeDefault, nil, []string{"mcp__docs__search"}, "mcp__docs__search", true, Deny},
	} {
		g, err := NewGate(GateConfig{Mode: c.mode, Root: root, Allow: c.allow, Deny: c.deny})
		require.NoError(t, err, c.name)
		v := g.Check(c.tool, c.readOnly, []byte(`{}`))
		assert.Equal(t, c.want, v.Decision, "%s: %s", c.name, v.Reason)
	}
}

func TestMCPRuleErrors(t *testing.T) {
	for _, r := range []string{"mcp__github__*x*", "mcp__github(list)", "mcp__git hub"} {
		_, err := NewGate(GateConfig{Root: t.TempDir(), Allow: []string{r}})
		assert.Error(t, err, r)
	}
}
