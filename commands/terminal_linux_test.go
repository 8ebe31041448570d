package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal pair: the controlling side, which reads
// what is written to the terminal, and the terminal itself.
func openPty(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	ctrl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ctrl.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0), "unlock the pty")
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	require.NoError(t, err, "pty number")
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err, "open the pty")
	return ctrl, tty
}

// runWithTTYStderr runs decode with stderr on a pseudo-terminal and stdout
// on a pipe, and returns both.
func runWithTTYStderr(t *testing.T, dir string, env []string, args ...string) (stdout, terminal string) {
	t.Helper()
	ctrl, tty := openPty(t)
	defer ctrl.Close()
	bin, err := exec.LookPath("decode")
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	require.NoError(t, cmd.Start())
	tty.Close() // the child has it; reading ends when the child exits
	var term bytes.Buffer
	_, err = io.Copy(&term, ctrl)
	var perr *os.PathError
	if err != nil && !(errors.As(err, &perr) && errors.Is(perr.Err, syscall.EIO)) {
		require.NoError(t, err, "read the terminal")
	}
	require.NoError(t, cmd.Wait(), "decode: %s", term.String())
	return out.String(), term.String()
}

func TestTerminalSpinnerAndColour(t *testing.T) {
	dir := testRepo(t, "slow.json", `{"responses": [
		{"delay_ms": 250, "calls": [{"name": "glob", "args": {"pattern": "*.json"}}]},
		{"text": "Found it."}
	]}`)

	t.Run("a terminal gets the spinner and colour", func(t *testing.T) {
		stdout, term := runWithTTYStderr(t, dir, decodeEnv(dir, "TERM=xterm"), "ask", "-m", "script:slow.json", "find the script")
		assert.Equal(t, "Found it.\n", stdout, "stdout, a pipe, stays plain")
		assert.Contains(t, term, "\r\x1b[K⠋ slow.json 0.", "the spinner's first frame, with the model and the time")
		assert.Contains(t, term, "\r\x1b[K", "the spinner's line is cleared")
		assert.Contains(t, term, sgrGreen+"•"+sgrReset+" ", "the tool line's bullet is green")
		assert.Contains(t, term, sgrDim+"decode: 2 model requests", "the summary is dim")
	})

	t.Run("NO_COLOR: the spinner but no colour", func(t *testing.T) {
		_, term := runWithTTYStderr(t, dir, decodeEnv(dir, "TERM=xterm", "NO_COLOR=1"), "ask", "-m", "script:slow.json", "find the script")
		assert.Contains(t, term, "⠋ slow.json")
		assert.NotContains(t, term, "\x1b[3", "no colours")
		assert.NotContains(t, term, sgrDim)
	})

	t.Run("TERM=dumb and -q: no escape codes at all", func(t *testing.T) {
		for _, env := range [][]string{{"TERM=dumb"}, {"TERM=xterm"}} {
			args := []string{"ask", "-m", "script:slow.json", "find the script"}
			if env[0] == "TERM=xterm" {
				args = append([]string{"ask", "-q"}, args[1:]...)
			}
			stdout, term := runWithTTYStderr(t, dir, decodeEnv(dir, env...), args...)
			assert.Equal(t, "Found it.\n", stdout)
			assert.False(t, strings.ContainsAny(term, "\x1b⠋"), "%v %v: nothing but lines: %q", env, args, term)
		}
	})
}
