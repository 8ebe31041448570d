//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where process groups do not exist.
func setProcessGroup(cmd *exec.Cmd) {}

// killGroup kills the process pid; children it started may survive.
func killGroup(pid int, hard bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
