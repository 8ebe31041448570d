//go:build unix && !linux

package mcp

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
