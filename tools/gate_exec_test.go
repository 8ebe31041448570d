//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCommands log their name and do nothing else; they succeed for the
// first calls and then fail, so while loops over them end.
var fakeCommands = []string{"go", "git", "rm", "curl", "chmod", "python3", "sudo", "doas", "su", "cp", "mv", "tee", "cat", "ssh-agent"}

// loggedCommands log their name and run the real program.
var loggedCommands = map[string]string{
	"env": "env", "nice": "nice", "timeout": "timeout", "nohup": "nohup", "xargs": "xargs", "find": "find",
	"stdbuf": "stdbuf", "setsid": "setsid", "bash": "bash", "sh": "bash", "dash": "bash", "zsh": "bash",
}

// unsafeForExec marks corpus commands that could reach real programs or
// files outside the test's directories when run for real.
var unsafeForExec = []string{"/bin", "/usr", "/tmp", "/etc", "/elsewhere", "/dev/zero", "command -p", "~/", " ../", "-C ..", "hash -p", "busybox"}

// TestGateAgainstBash runs corpus commands in a real bash whose PATH holds
// only logging stand-ins, and checks that for every program bash actually
// ran, a deny rule naming it stops the line, even in bypass mode. It is the
// check that the gate's parser sees what bash runs.
func TestGateAgainstBash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hundreds of shells")
	}
	realBash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	logDir := t.TempDir()
	cases := execCorpus()
	ranBy := make([][]string, len(cases))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				ranBy[i] = runLogged(logDir, realBash, cases[i].cmd)
			}
		})
	}
	for i := range cases {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	gates := map[string]*Gate{}
	var escapes []string
	ran, commands := 0, 0
	for i, c := range cases {
		commands++
		for _, name := range ranBy[i] {
			ran++
			g, ok := gates[name]
			if !ok {
				g, err = NewGate(GateConfig{Mode: ModeBypass, Root: logDir, Deny: []string{fmt.Sprintf("bash(%s *)", name)}})
				require.NoError(t, err)
				gates[name] = g
			}
			args, _ := json.Marshal(map[string]string{"command": c.cmd})
			if v := g.Check("bash", false, args); v.Decision == Allow {
				escapes = append(escapes, fmt.Sprintf("%q ran %s, yet the gate allowed it under bash(%s *)", c.cmd, name, name))
			}
		}
	}
	t.Logf("%d command lines ran %d programs", commands, ran)
	require.Greater(t, ran, 200, "the stand-ins were run")
	assert.Equal(t, 0, len(escapes), "programs bash ran that a deny rule did not stop:\n%s", strings.Join(escapes, "\n"))
}

// execCorpus is the part of the corpus that is safe to run for real.
func execCorpus() []corpusCase {
	var out []corpusCase
	for _, t := range templates {
		for _, b := range []string{badCommands[0].cmd, badCommands[4].cmd, badCommands[3].cmd} {
			out = append(out, corpusCase{cmd: t.expand(goodCommands[0], b)})
		}
	}
	out = append(out, handCases...)
	return slices.DeleteFunc(out, func(c corpusCase) bool {
		if len(c.cmd) > 4096 || strings.IndexByte(c.cmd, 0) >= 0 {
			return true
		}
		for _, s := range unsafeForExec {
			if strings.Contains(c.cmd, s) {
				return true
			}
		}
		return false
	})
}

func writeStandIns(bin, logPath string) error {
	logQ := shq(logPath)
	for _, name := range fakeCommands {
		script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' %s >> %s\nc=0\nwhile IFS= read -r _; do c=$((c+1)); done < %s\n[ \"$c\" -lt 60 ]\n", name, logQ, logQ)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			return err
		}
	}
	for name, target := range loggedCommands {
		real, err := exec.LookPath(target)
		if err != nil {
			continue
		}
		script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' %s >> %s\nexec %s \"$@\"\n", name, logQ, shq(real))
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// runLogged runs command in a fresh directory, with stand-ins of its own
// so that stragglers of earlier commands (setsid, nohup) cannot log into
// its log, and returns the distinct stand-ins it ran. A setup failure is
// reported as a stand-in name no gate rule can match.
func runLogged(parent, realBash, command string) []string {
	root, err := os.MkdirTemp(parent, "run-*")
	if err != nil {
		return []string{"setup failed: " + err.Error()}
	}
	defer os.RemoveAll(root)
	dir, bin := filepath.Join(root, "work"), filepath.Join(root, "bin")
	logPath := filepath.Join(bin, "log")
	for _, d := range []string{dir, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return []string{"setup failed: " + err.Error()}
		}
	}
	if err := writeStandIns(bin, logPath); err != nil {
		return []string{"setup failed: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, realBash, "-c", command)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin, "HOME=" + dir, "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	_ = cmd.Run() // most of these commands fail, as they should
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	data, _ := os.ReadFile(logPath)
	var names []string
	for _, n := range strings.Fields(string(data)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
