package commands

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPromptCallShowsTheWholeCommandEscaped(t *testing.T) {
	for _, c := range []struct{ name, command, want string }{
		{"cursor movement hides a line", "echo hi\r\x1b[2K\x1b[1Aecho safe", `echo hi\r\x1b[2K\x1b[1Aecho safe`},
		{"a second command below the fold", "ls\n\n\n\n\n\n\n\n\nrm -rf ~", `ls\n\n\n\n\n\n\n\n\nrm -rf ~`},
		{"right-to-left override", "echo \u202egnp.exe", `echo \u202egnp.exe`},
		{"zero-width space", "r\u200bm -rf /", `r\u200bm -rf /`},
		{"C1 control", "echo \u009b31m", `echo \u009b31m`},
		{"tab and backslash", "printf 'a\\tb'\t|cat", `printf 'a\\tb'\t|cat`},
		{"plain text stays", "go test ./... && echo héllo", "go test ./... && echo héllo"},
	} {
		args, _ := json.Marshal(map[string]string{"command": c.command})
		assert.Equal(t, c.want, promptCall(args), c.name)
	}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	args, _ := json.Marshal(map[string]string{"command": string(long) + " && rm -rf ~"})
	assert.Contains(t, promptCall(args), "&& rm -rf ~", "never clipped")
	assert.Equal(t, `echo \xff`, terminalSafe("echo \xff"), "invalid UTF-8")
	assert.Equal(t, `a.txt {"content":"x\n\u001b[0m"}`, promptCall(json.RawMessage(`{"path":"a.txt","content":"x\n\u001b[0m"}`)),
		"other arguments follow, escaped")
}
