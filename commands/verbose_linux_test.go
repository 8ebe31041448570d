package commands

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVerboseAtTerminal: at a terminal, a -v line is written once the
// spinner's line is cleared, so it starts a line of its own and is not
// drawn over.
func TestVerboseAtTerminal(t *testing.T) {
	dir := testRepo(t, "slow.json", `{"responses": [
		{"delay_ms": 250, "calls": [{"name": "glob", "args": {"pattern": "*.json"}}]},
		{"text": "Found it."}
	]}`)
	stdout, term := runWithTTYStderr(t, dir, decodeEnv(dir, "TERM=xterm", "NO_COLOR=1"), "ask", "-v", "-m", "script:slow.json", "find the script")
	assert.Equal(t, "Found it.\n", stdout, "stdout is the answer alone")
	assert.Contains(t, term, "⠋ slow.json", "the spinner ran")
	assert.Regexp(t, regexp.MustCompile(`\r\x1b\[Kdecode: gate: glob \*\.json: allowed \(read-only\)\r?\n`), term,
		"the gate line follows the cleared spinner line: %q", term)
	assert.NotRegexp(t, regexp.MustCompile(`⠋[^\r\n]*decode: `), term, "no -v line is written into the spinner's line")
}
