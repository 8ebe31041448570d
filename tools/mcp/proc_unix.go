//go:build unix

package mcp

import (
	"os/exec"
	"runtime"
	"syscall"
)

// setProcessGroup puts the server in a process group of its own, so that
// stopping it reaches every process it started, and (on Linux) has the
// kernel kill it if decode dies without stopping it.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if runtime.GOOS == "linux" {
		setPdeathsig(cmd.SysProcAttr)
	}
}

// killGroup signals the server's process group: SIGTERM, or SIGKILL when
// hard is set.
func killGroup(cmd *exec.Cmd, hard bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
