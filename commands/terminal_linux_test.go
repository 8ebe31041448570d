package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// ptyRun is decode running with a pseudo-terminal as its controlling
// terminal, stdin and stderr, and stdout too when outOnPty (else a pipe):
// what a person at a terminal sees, and where their keys go.
type ptyRun struct {
	cmd  *exec.Cmd
	ctrl *os.File
	out  bytes.Buffer
	mu   sync.Mutex
	term bytes.Buffer
	done chan struct{}
}

func startOnPty(t *testing.T, dir string, env []string, outOnPty bool, args ...string) *ptyRun {
	t.Helper()
	ctrl, tty := openPty(t)
	bin, err := exec.LookPath("decode")
	require.NoError(t, err)
	p := &ptyRun{ctrl: ctrl, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, &p.out, tty
	if outOnPty {
		p.cmd.Stdout = tty
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, p.cmd.Start())
	tty.Close()
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := ctrl.Read(buf)
			p.mu.Lock()
			p.term.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		ctrl.Close()
	})
	return p
}

// screen is everything written to the terminal so far.
func (p *ptyRun) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.term.String()
}

// waitFor waits until the terminal shows s.
func (p *ptyRun) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.screen(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%s", s, p.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// type_ sends keys to the terminal.
func (p *ptyRun) type_(t *testing.T, keys string) {
	t.Helper()
	_, err := p.ctrl.Write([]byte(keys))
	require.NoError(t, err)
}

// exit waits (at most 20 s) for decode to end and returns its exit code.
func (p *ptyRun) exit(t *testing.T) int {
	t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-waited
		t.Fatalf("decode did not end; the terminal shows:\n%s", p.screen())
	}
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

func TestTerminalCtrlCAtApprovalPrompt(t *testing.T) {
	dir := testRepo(t, "touch.json", `{"responses": [
		{"text": "Let me create it.", "calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"text": "Done."}
	]}`)
	p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:touch.json", "make a file")
	p.waitFor(t, "[N]o")
	p.type_(t, "\x03")
	assert.Equal(t, ExitInterrupted, p.exit(t), "Ctrl-C at the prompt ends the run at once")
	assert.NotContains(t, p.screen(), "stopping after the current step", "no waiting for a step that cannot end")
	assert.Contains(t, p.screen(), "interrupted; the session is saved")
	assert.NoFileExists(t, dir+"/made.txt", "the call did not run")

	stdout, _, code := decodeRun(t, dir, decodeEnv(dir), "", "log", "--jsonl", "@")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `"type":"interrupted"`, "the session records where it stopped")
	assert.NotContains(t, stdout, `"type":"tool_result"`, "the call stays unanswered, so a resume asks again")
}

func TestTerminalStdoutStreamsNarration(t *testing.T) {
	dir := testRepo(t, "look.json", `{"responses": [
		{"text": "Let me look.", "calls": [{"name": "glob", "args": {"pattern": "*.json"}}]},
		{"text": "It is look.json."}
	]}`)
	p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), true, "ask", "-m", "script:look.json", "which script?")
	require.Equal(t, 0, p.exit(t))
	screen := strings.ReplaceAll(p.screen(), "\r\n", "\n")
	assert.Contains(t, screen, "Let me look.\n• glob *.json", "at a terminal the narration streams on stdout, then the tool line")
	assert.Contains(t, screen, "\nIt is look.json.\n", "then the answer")
	assert.Equal(t, 1, strings.Count(screen, "Let me look."), "the narration is shown once")
}

func TestTerminalApprovalPromptEscapesTheCommand(t *testing.T) {
	dir := testRepo(t, "spoof.json", `{"responses": [
		{"calls": [{"name": "bash", "args": {"command": "echo hi\r\u001b[2K\u001b[1Aecho safe\nrm -rf made"}}]},
		{"text": "Done."}
	]}`)
	p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:spoof.json", "say hi")
	p.waitFor(t, "[N]o")
	screen := p.screen()
	p.type_(t, "\x03")
	p.exit(t)
	assert.Contains(t, screen, `allow bash echo hi\r\x1b[2K\x1b[1Aecho safe\nrm -rf made?`, "the whole command, escapes and newline visible")
	assert.NotContains(t, screen, "\x1b[2K", "the escape sequence never reaches the terminal raw")
}

func TestTerminalApprovalPromptStartsOnItsOwnLine(t *testing.T) {
	dir := testRepo(t, "touch.json", `{"responses": [
		{"text": "Let me create it.", "calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"text": "Done."}
	]}`, "quiet.json", `{"responses": [
		{"delay_ms": 400, "calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"text": "Done."}
	]}`)

	t.Run("after text streamed without a newline", func(t *testing.T) {
		p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), true, "run", "-m", "script:touch.json", "make a file")
		p.waitFor(t, "decode: allow bash")
		screen := p.screen()
		p.type_(t, "\x03")
		p.exit(t)
		assert.Contains(t, screen, "Let me create it.\r\ndecode: allow bash", "the prompt starts below the streamed text")
	})

	t.Run("with stdout in a pipe, the narration comes first", func(t *testing.T) {
		p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:touch.json", "make a file")
		p.waitFor(t, "decode: allow bash")
		screen := p.screen()
		p.type_(t, "\x03")
		p.exit(t)
		assert.Contains(t, screen, "Let me create it.\r\ndecode: allow bash", "what the model said shows above its question")
	})

	t.Run("after the spinner", func(t *testing.T) {
		p := startOnPty(t, dir, decodeEnv(dir, "TERM=xterm", "NO_COLOR=1"), false, "run", "-m", "script:quiet.json", "make a file")
		p.waitFor(t, "decode: allow bash")
		screen := p.screen()
		p.type_(t, "\x03")
		p.exit(t)
		require.Contains(t, screen, "⠋ quiet.json", "the spinner was drawn")
		before, _, _ := strings.Cut(screen, "decode: allow bash")
		assert.True(t, strings.HasSuffix(before, "\r\x1b[K") || strings.HasSuffix(before, "\n"),
			"the spinner's line is cleared before the prompt: %q", before[max(0, len(before)-40):])
	})
}

func TestTerminalSpinnerClearedBeforeStopping(t *testing.T) {
	dir := testRepo(t, "slow.json", `{"responses": [
		{"delay_ms": 1500, "calls": [{"name": "glob", "args": {"pattern": "*.json"}}]},
		{"text": "Found it."}
	]}`)
	p := startOnPty(t, dir, decodeEnv(dir, "TERM=xterm", "NO_COLOR=1"), false, "run", "-m", "script:slow.json", "find the script")
	p.waitFor(t, "⠋ slow.json")
	p.type_(t, "\x03")
	assert.Equal(t, ExitInterrupted, p.exit(t), "the first Ctrl-C stops after the step")
	screen := p.screen()
	before, _, found := strings.Cut(screen, "decode: stopping after the current step")
	require.True(t, found, "the terminal shows the stop notice:\n%s", screen)
	assert.True(t, strings.HasSuffix(before, "\r\x1b[K"),
		"the spinner's line is cleared before the notice: %q", before[max(0, len(before)-40):])
}

func TestTerminalApprovalAlways(t *testing.T) {
	dir := testRepo(t, "touch.json", `{"responses": [
		{"calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"text": "Done."},
		{"calls": [{"name": "bash", "args": {"command": "touch made.txt"}}]},
		{"text": "Again."}
	]}`)
	p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:touch.json", "make a file")
	p.waitFor(t, "[y]es/[a]lways/[N]o/no, because…")
	assert.Contains(t, p.screen(), "(a allows bash(touch made.txt) for the rest of this session)\r\n[y]es/", "what always allows is said before the choice")
	p.type_(t, "a\r")
	require.Equal(t, 0, p.exit(t), p.screen())
	screen := p.screen()
	assert.Equal(t, 1, strings.Count(screen, "decode: allow bash"), "the same command is not asked about again in the run:\n%s", screen)
	assert.Contains(t, screen, "bash(touch made.txt) is allowed for the rest of this session")
	assert.Equal(t, "Done.\n", p.out.String())

	stdout, _, code := decodeRun(t, dir, decodeEnv(dir), "", "log", "--jsonl", "@")
	require.Equal(t, 0, code)
	assert.Regexp(t, `"type":"spec","data":\{"changes":\[\{"setting":"allow","from":"","to":"bash\(touch made.txt\)","looser":true\}\]`, stdout,
		"the rule is recorded as a change of the run spec")

	// A resume with no one to ask runs the same command without pausing.
	stdout, stderr, code := decodeRun(t, dir, decodeEnv(dir), "", "resume", "@", "once more")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Again.\n", stdout)
	assert.Contains(t, stderr, "continuing with the session's permissions: allow bash(touch made.txt)")
}

func TestTerminalApprovalNoBecause(t *testing.T) {
	dir := testRepo(t, "rm.json", `{"responses": [
		{"calls": [{"name": "bash", "args": {"command": "rm -rf build"}}]},
		{"expect": "the user declined this call and said: use make clean", "text": "I will use make clean."}
	]}`)
	for name, keys := range map[string][]string{
		"on one line":      {"n use make clean\r"},
		"on the next line": {"n\r", "use make clean\r"},
		"as no, because …": {"no, use make clean\r"},
	} {
		t.Run(name, func(t *testing.T) {
			p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:rm.json", "clean up")
			p.waitFor(t, "[N]o/no, because…")
			p.type_(t, keys[0])
			if len(keys) > 1 {
				p.waitFor(t, "because… (Enter for none)")
				p.type_(t, keys[1])
			}
			require.Equal(t, 0, p.exit(t), "the model got the reason (its script expects it):\n%s", p.screen())
			assert.Equal(t, "I will use make clean.\n", p.out.String())
		})
	}

	t.Run("a plain no and an unknown answer", func(t *testing.T) {
		dir := testRepo(t, "rm.json", `{"responses": [
			{"calls": [{"name": "bash", "args": {"command": "rm -rf build"}}]},
			{"expect": "the user declined this call", "text": "Fine."}
		]}`)
		p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:rm.json", "clean up")
		p.waitFor(t, "[N]o/no, because…")
		p.type_(t, "maybe\r")
		p.waitFor(t, "decode: answer y (yes), a (always bash(rm -rf build)), n or Enter (no)")
		p.type_(t, "\r")
		require.Equal(t, 0, p.exit(t), p.screen())
		assert.Equal(t, "Fine.\n", p.out.String())
	})
}

func TestTerminalApprovalShowsTheDiff(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&long, "line %d\\n", i)
	}
	dir := testRepo(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n", "edit.json", `{"responses": [
		{"calls": [{"name": "read", "args": {"path": "main.go"}}]},
		{"calls": [{"name": "edit", "args": {"path": "main.go", "old_string": "\"hi\"", "new_string": "\"bye\""}}]},
		{"calls": [{"name": "write", "args": {"path": "long.txt", "content": "`+long.String()+`"}}]},
		{"text": "Done."}
	]}`)

	t.Run("plain", func(t *testing.T) {
		p := startOnPty(t, dir, decodeEnv(dir, "TERM=dumb"), false, "run", "-m", "script:edit.json", "change it")
		p.waitFor(t, "[N]o")
		screen := p.screen()
		p.type_(t, "y\r")
		p.waitFor(t, "allow write long.txt")
		p.waitFor(t, "more lines of the diff not shown")
		long := p.screen()[len(screen):]
		p.type_(t, "n\r\r")
		require.Equal(t, 0, p.exit(t), p.screen())
		assert.Contains(t, screen, "decode: allow edit main.go? ", "the call by its file; the diff shows the rest")
		assert.Contains(t, screen, "--- a/main.go\r\n+++ b/main.go\r\n@@ -1,5 +1,5 @@\r\n package main\r\n \r\n func main() {\r\n-    println(\"hi\")\r\n+    println(\"bye\")\r\n }\r\n(a allows edit(main.go) for the rest of this session)\r\n[y]es/",
			"the unified diff, before the choices")
		assert.NotContains(t, screen, "\x1b", "TERM=dumb: no escape codes")
		assert.Contains(t, long, "+line 37\r\n… 63 more lines of the diff not shown\r\n", "a long diff is cut at 40 lines, saying how many more")
		assert.NotContains(t, long, "line 38")
		data, err := os.ReadFile(dir + "/main.go")
		require.NoError(t, err)
		assert.Contains(t, string(data), `println("bye")`, "the approved edit ran")
		assert.NoFileExists(t, dir+"/long.txt", "the refused write did not")
	})

	t.Run("colour, and NO_COLOR", func(t *testing.T) {
		for _, noColor := range []bool{false, true} {
			env := decodeEnv(dir, "TERM=xterm")
			if noColor {
				env = append(env, "NO_COLOR=1")
			}
			require.NoError(t, os.WriteFile(dir+"/main.go", []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644))
			p := startOnPty(t, dir, env, false, "run", "--no-session", "-m", "script:edit.json", "change it")
			p.waitFor(t, "[N]o")
			screen := p.screen()
			p.type_(t, "\x03")
			p.exit(t)
			if noColor {
				assert.NotContains(t, screen, sgrGreen+"+", "NO_COLOR: no colour in the diff")
				assert.NotContains(t, screen, sgrRed+"-")
				assert.Contains(t, screen, "+    println(\"bye\")")
			} else {
				assert.Contains(t, screen, sgrRed+"-    println(\"hi\")"+sgrReset, "removed lines red")
				assert.Contains(t, screen, sgrGreen+"+    println(\"bye\")"+sgrReset, "added lines green")
			}
		}
	})
}
