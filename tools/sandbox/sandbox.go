// Package sandbox runs commands contained by the operating system: on Linux
// in a helper that decode re-executes from its own binary, which enters
// user, mount, PID and network namespaces, restricts files with Landlock and
// system calls with seccomp, and then runs the command. Each layer falls
// back on its own when the kernel or the container refuses it; Probe says
// which layers a machine gives.
//
// Other packages run a program in the sandbox with Command:
//
//	cmd, err := sandbox.Command(ctx, sandbox.Spec{
//		Args: []string{"npx", "server"}, Dir: ws, Env: env,
//		Layers: probe.Layers, Read: []string{ws}, Write: []string{tmp},
//	})
//
// The helper is the decode binary itself, called with HelperArg as its
// first argument; the program's main must hand such a call to HelperMain
// before doing anything else.
package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// HelperArg is the first argument that makes decode the sandbox helper.
const HelperArg = "__decode-sandbox-helper"

// Layer names one containment layer.
type Layer string

// The layers, in the order the helper applies them.
const (
	// UserNS gives the helper the capabilities to set up the others without
	// root.
	UserNS Layer = "userns"
	// MountNS makes the protected paths read-only bind mounts and gives the
	// PID namespace its own /proc.
	MountNS Layer = "mountns"
	// PIDNS hides every process outside the command's own.
	PIDNS Layer = "pidns"
	// NetNS gives the command a network of its own loopback only.
	NetNS Layer = "netns"
	// Landlock confines the files the command may read and write.
	Landlock Layer = "landlock"
	// Seccomp denies system calls a command has no use for (ptrace,
	// process_vm_*, io_uring, keyctl, mount, bpf, ...).
	Seccomp Layer = "seccomp"
)

// AllLayers lists every layer.
var AllLayers = []Layer{UserNS, MountNS, PIDNS, NetNS, Landlock, Seccomp}

// Level says how much containment a run demands.
type Level string

// The levels.
const (
	// Auto uses every layer the machine gives and records what is missing.
	Auto Level = "auto"
	// Strict refuses to run a command unless every layer is there.
	Strict Level = "strict"
	// Off runs commands as plain child processes.
	Off Level = "off"
)

// ParseLevel parses --sandbox; the empty string is Auto.
func ParseLevel(s string) (Level, error) {
	switch l := Level(strings.ToLower(strings.TrimSpace(s))); l {
	case "":
		return Auto, nil
	case Auto, Strict, Off:
		return l, nil
	}
	return "", fmt.Errorf("unknown sandbox level %q (want auto, strict or off)", s)
}

// Spec says what to run and what it may reach.
type Spec struct {
	// Args is the program and its arguments; Args[0] is looked up in PATH
	// of Env.
	Args []string
	// Dir is the working directory; Env the whole environment (nil means
	// empty, never the caller's).
	Dir string
	Env []string
	// Layers are the layers to apply, usually a Probe's; a layer that then
	// fails makes the command fail rather than run with less.
	Layers []Layer
	// Unconfined lifts file confinement: the command may read and write
	// wherever the user can and reaches the host's network. Protected paths
	// stay read-only and the PID namespace and seccomp still hold (bypass
	// mode and approved escalations).
	Unconfined bool
	// Read and Write are the paths (directories or files) the command may
	// read, and read and write; everything else is out of reach.
	Read, Write []string
	// Protected are paths inside Write that stay read-only (.git/hooks,
	// .git/config, .decode, decode's refs).
	Protected []string
	// Pinned are directories bind-mounted on themselves, so that no
	// command can rename, remove or replace them (a repository's .git).
	Pinned []string
	// Net keeps the host's network (no network namespace).
	Net bool
	// ProxySocket is a Proxy's Unix socket: in its network namespace the
	// helper listens on a loopback port, forwards each connection there,
	// and points the command's HTTP_PROXY and friends at it.
	ProxySocket string `json:",omitempty"`
	// Helper is the binary to run as the helper: os.Executable() when
	// empty.
	Helper string
}

// Command returns the command that runs spec.Args in the sandbox. Its
// Stdin, Stdout, Stderr and ExtraFiles are the caller's to set; they reach
// the program unchanged. With no layers the program runs directly.
func Command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	if len(spec.Args) == 0 {
		return nil, fmt.Errorf("sandbox: no program to run")
	}
	if len(spec.Layers) == 0 {
		cmd := exec.CommandContext(ctx, spec.Args[0], spec.Args[1:]...)
		if p, err := lookPath(spec.Args[0], spec.Env); err == nil {
			cmd.Path, cmd.Err = p, nil
		}
		cmd.Dir, cmd.Env = spec.Dir, append([]string{}, spec.Env...)
		return cmd, nil
	}
	return helperCommand(ctx, spec)
}

// helperCommand returns the helper's command for spec, in the namespaces
// spec.Layers name, with more arguments after the specification.
func helperCommand(ctx context.Context, spec Spec, more ...string) (*exec.Cmd, error) {
	helper := spec.Helper
	if helper == "" {
		var err error
		if helper, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox: find decode's own binary: %w", err)
		}
	}
	if spec.Net {
		spec.Layers = without(spec.Layers, NetNS) // the host's network
		spec.ProxySocket = ""
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// argv[0] is "decode" so that a test binary dispatching on its name
	// (testscript) runs decode's main, which hands over to HelperMain.
	cmd := exec.CommandContext(ctx, helper)
	cmd.Args = append([]string{"decode", HelperArg, string(data)}, more...)
	cmd.Dir = spec.Dir
	cmd.Env = append([]string{}, spec.Env...)
	if err := setNamespaces(cmd, spec.Layers); err != nil {
		return nil, err
	}
	return cmd, nil
}

// Has reports whether layers holds l.
func Has(layers []Layer, l Layer) bool { return slices.Contains(layers, l) }

// lookPath finds file in the PATH of env, so the program found is the one
// the command's own environment names.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			for _, dir := range strings.Split(v, ":") {
				if dir == "" {
					dir = "."
				}
				p := dir + "/" + file
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
			return "", exec.ErrNotFound
		}
	}
	return exec.LookPath(file)
}

// Report says which layers a machine gives and why the others are missing.
type Report struct {
	// Layers are the layers that work here.
	Layers []Layer `json:"layers"`
	// Missing maps each missing layer to why.
	Missing map[Layer]string `json:"missing,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version (0 without it).
	LandlockABI int `json:"landlock_abi,omitempty"`
	// Supported is false on systems with no sandbox at all.
	Supported bool `json:"supported"`
}

// Complete reports whether every layer is there.
func (r Report) Complete() bool {
	for _, l := range AllLayers {
		if !Has(r.Layers, l) {
			return false
		}
	}
	return true
}

// Summary is one line: "landlock v7, userns, mountns, pidns, netns, seccomp"
// and what is missing.
func (r Report) Summary() string {
	if !r.Supported {
		return "no sandbox on this system: " + r.Missing[UserNS]
	}
	var have []string
	for _, l := range AllLayers {
		if Has(r.Layers, l) {
			if l == Landlock {
				have = append(have, fmt.Sprintf("landlock v%d", r.LandlockABI))
			} else {
				have = append(have, string(l))
			}
		}
	}
	s := strings.Join(have, ", ")
	if s == "" {
		s = "no layer"
	}
	var miss []string
	for _, l := range AllLayers {
		if why, ok := r.Missing[l]; ok {
			miss = append(miss, fmt.Sprintf("%s (%s)", l, why))
		}
	}
	if len(miss) > 0 {
		s += "; missing: " + strings.Join(miss, ", ")
	}
	return s
}

// disabled returns the layers named in DECODE_SANDBOX_DISABLE (a comma
// list), which tests and users use to turn layers off one by one.
func disabled(env string) map[Layer]bool {
	out := map[Layer]bool{}
	for _, s := range strings.Split(env, ",") {
		if s = strings.TrimSpace(strings.ToLower(s)); s != "" {
			out[Layer(s)] = true
		}
	}
	return out
}
