package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"decode/agent"
)

func TestParseApproval(t *testing.T) {
	const rule = "bash(make)"
	for _, c := range []struct {
		line, always string
		want         agent.Approval
		known        bool
	}{
		{"", rule, agent.Approval{}, true},
		{"y", rule, agent.Approval{OK: true}, true},
		{" YES \n", rule, agent.Approval{OK: true}, true},
		{"a", rule, agent.Approval{OK: true, Always: rule}, true},
		{"always", rule, agent.Approval{OK: true, Always: rule}, true},
		{"a", "", agent.Approval{}, false},
		{"n", rule, agent.Approval{}, true},
		{"No", rule, agent.Approval{}, true},
		{"n use make clean", rule, agent.Approval{Reason: "use make clean"}, true},
		{"no, because it is slow", rule, agent.Approval{Reason: "because it is slow"}, true},
		{"yes please", rule, agent.Approval{}, false},
		{"maybe", rule, agent.Approval{}, false},
	} {
		got, known := parseApproval(c.line, c.always)
		assert.Equal(t, c.known, known, "%q is an answer", c.line)
		if known {
			assert.Equal(t, c.want, got, "%q", c.line)
		}
	}
}

func TestPromptDiff(t *testing.T) {
	diff := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\told\n+new\x1b[2K\n"
	assert.Equal(t, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-    old\n+new\\x1b[2K\n", promptDiff(diff, false),
		"tabs as spaces, escape sequences shown, never sent")
	colored := promptDiff(diff, true)
	assert.Contains(t, colored, sgrRed+"-    old"+sgrReset)
	assert.Contains(t, colored, sgrGreen+"+new\\x1b[2K"+sgrReset)
	assert.Contains(t, colored, sgrDim+"@@ -1 +1 @@"+sgrReset)

	var long strings.Builder
	for i := range 45 {
		fmt.Fprintf(&long, "+%d\n", i)
	}
	out := promptDiff(long.String(), false)
	assert.Equal(t, maxPromptDiff+1, strings.Count(out, "\n"))
	assert.True(t, strings.HasSuffix(out, "+39\n… 5 more lines of the diff not shown\n"), out)
	assert.Empty(t, promptDiff("", true))
}
