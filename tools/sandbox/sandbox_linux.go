package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// nsFlags maps the namespace layers to clone flags.
var nsFlags = []struct {
	layer Layer
	flag  uintptr
}{
	{UserNS, syscall.CLONE_NEWUSER},
	{MountNS, syscall.CLONE_NEWNS},
	{PIDNS, syscall.CLONE_NEWPID},
	{NetNS, syscall.CLONE_NEWNET},
}

// setNamespaces starts cmd in the namespaces layers name, mapping the
// caller's user and group to themselves, and kills the helper when the
// caller dies.
func setNamespaces(cmd *exec.Cmd, layers []Layer) error {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	for _, ns := range nsFlags {
		if Has(layers, ns.layer) {
			attr.Cloneflags |= ns.flag
		}
	}
	if Has(layers, UserNS) {
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		if uid != 0 {
			// The helper keeps, in its own namespaces only, what it needs to
			// mount and bring up loopback; it drops them before the command.
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
		}
	}
	cmd.SysProcAttr = attr
	return nil
}

// Probe finds which layers work here by running the helper once with
// every layer it may try: namespaces the kernel refuses are dropped one
// group at a time, and the helper reports which of the rest it could set
// up. helper is the binary (os.Executable() when empty); DECODE_SANDBOX_DISABLE
// in env turns layers off, as if the machine refused them.
func Probe(ctx context.Context, helper string, env []string) Report {
	rep := Report{Supported: true, Missing: map[Layer]string{}}
	off := disabled(envValue(env, "DECODE_SANDBOX_DISABLE"))
	want := []Layer{}
	for _, l := range AllLayers {
		if off[l] {
			rep.Missing[l] = "disabled by DECODE_SANDBOX_DISABLE"
			continue
		}
		want = append(want, l)
	}
	if !Has(want, UserNS) && os.Getuid() != 0 {
		for _, l := range []Layer{MountNS, PIDNS, NetNS} {
			if _, ok := rep.Missing[l]; !ok {
				rep.Missing[l] = "needs a user namespace when not root"
			}
		}
		want = without(want, MountNS, PIDNS, NetNS)
	}
	if Has(want, PIDNS) && !Has(want, MountNS) {
		rep.Missing[PIDNS] = "needs a mount namespace for its own /proc"
		want = without(want, PIDNS)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		got, err := probeOnce(ctx, helper, want)
		if err == nil {
			rep.Layers = got.Layers
			rep.LandlockABI = got.LandlockABI
			for l, why := range got.Missing {
				rep.Missing[l] = why
			}
			return rep
		}
		// The kernel refused the namespaces: drop them and try again.
		ns := []Layer{UserNS, MountNS, PIDNS, NetNS}
		if Has(want, UserNS) && os.Getuid() == 0 {
			ns = []Layer{UserNS} // root can have the others without one
		}
		dropped := false
		for _, l := range ns {
			if Has(want, l) {
				rep.Missing[l] = "refused: " + err.Error()
				dropped = true
			}
		}
		if !dropped {
			for _, l := range want {
				rep.Missing[l] = "the sandbox helper failed: " + err.Error()
			}
			return rep
		}
		want = without(want, ns...)
		if Has(want, PIDNS) && !Has(want, MountNS) {
			want = without(want, PIDNS)
		}
	}
}

// probeOnce runs the helper in probe mode with the layers want.
func probeOnce(ctx context.Context, helper string, want []Layer) (Report, error) {
	cmd, err := helperCommand(ctx, Spec{Args: []string{"probe"}, Dir: "/", Layers: want, Helper: helper}, "probe")
	if err != nil {
		return Report{}, err
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return Report{}, errors.New(msg)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return Report{}, fmt.Errorf("the helper's report is unreadable: %v", err)
	}
	return rep, nil
}

func without(ls []Layer, drop ...Layer) []Layer {
	var out []Layer
	for _, l := range ls {
		if !Has(drop, l) {
			out = append(out, l)
		}
	}
	return out
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// LandlockABI returns the kernel's Landlock ABI version, 0 without it.
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// HideProcess makes the calling process non-dumpable: its /proc files
// (environ, mem) become root's, no core file is written, and no process
// without CAP_SYS_PTRACE can attach to it. decode calls it before running
// commands, as a last line should the PID namespace and Landlock both be
// missing. It does nothing for a user other than root whose layers include
// a user namespace: the child's uid_map would become root's too, and the
// namespace could not be set up.
func HideProcess(layers []Layer) error {
	if Has(layers, UserNS) && os.Getuid() != 0 {
		return nil
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
