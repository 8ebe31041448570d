//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

func setNamespaces(cmd *exec.Cmd, layers []Layer) error {
	return fmt.Errorf("sandbox: not available on %s", runtime.GOOS)
}

// Probe reports that this system has no sandbox.
func Probe(ctx context.Context, helper string, env []string) Report {
	why := "decode's sandbox needs Linux; commands run unconfined on " + runtime.GOOS
	return Report{Missing: map[Layer]string{UserNS: why}}
}

// HelperMain refuses: there is no helper off Linux.
func HelperMain(args []string) int {
	fmt.Fprintln(os.Stderr, "decode sandbox: not available on", runtime.GOOS)
	return 125
}

// LandlockABI is 0 off Linux.
func LandlockABI() int { return 0 }

// HideProcess does nothing off Linux.
func HideProcess(layers []Layer) error { return nil }
