package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"decode/tools"
	"decode/tools/sandbox"
)

// SandboxConfig is the [sandbox] table of the user's config. A
// repository's config cannot set it: it would widen what commands reach.
type SandboxConfig struct {
	// Level is auto (the default), strict or off; --sandbox and
	// DECODE_SANDBOX override it.
	Level string `toml:"level"`
	// Read adds paths commands may read (~ is the home directory).
	Read []string `toml:"read"`
	// AllowNet is true (commands keep the host's network) or a list of
	// hosts commands reach through decode's proxy (as --allow-net).
	AllowNet any `toml:"allow_net"`
}

// netAllow is what commands may reach: the whole network, or the hosts
// of the config and the flags through the proxy.
func netAllow(o *AgentOptions, cfg Config) (all bool, rules []sandbox.HostRule, err error) {
	var hosts []string
	switch v := cfg.Sandbox.AllowNet.(type) {
	case nil:
	case bool:
		all = v
	case []any:
		for _, h := range v {
			s, ok := h.(string)
			if !ok {
				return false, nil, fmt.Errorf("config: [sandbox] allow_net: want true, false or a list of hosts, got %v", h)
			}
			hosts = append(hosts, s)
		}
	default:
		return false, nil, fmt.Errorf("config: [sandbox] allow_net: want true, false or a list of hosts such as [\"proxy.golang.org\"], got %v", v)
	}
	for _, h := range append(hosts, o.AllowNet...) {
		if h == "*" {
			all = true
			continue
		}
		r, err := sandbox.ParseHostRule(h)
		if err != nil {
			return false, nil, &UsageError{Msg: "--allow-net: " + err.Error()}
		}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	return all, rules, nil
}

// sandboxState is what a run's sandbox set-up decided, for the start
// entry and the warnings.
type sandboxState struct {
	bash    *tools.BashSandbox // nil: commands run unconfined
	summary string             // recorded in the session's start entry
	warning string             // said on stderr
	proxy   *sandbox.Proxy     // the network proxy for --allow-net hosts
}

// close stops the network proxy, if one runs.
func (s sandboxState) close() {
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
}

// sandboxLevel resolves the level: flag, then DECODE_SANDBOX, then config.
func (f *Factory) sandboxLevel(o *AgentOptions, cfg Config) (sandbox.Level, error) {
	s := o.Sandbox
	if s == "" {
		s = f.Getenv("DECODE_SANDBOX")
	}
	if s == "" {
		s = cfg.Sandbox.Level
	}
	l, err := sandbox.ParseLevel(s)
	if err != nil {
		return "", &UsageError{Msg: "--sandbox: " + err.Error()}
	}
	return l, nil
}

// setUpSandbox probes the machine once and builds the bash tool's sandbox
// for the workspace: which layers run, what commands read and write.
// --sandbox strict refuses to run without every layer.
func (f *Factory) setUpSandbox(ctx context.Context, o *AgentOptions, cfg Config, ws *tools.Workspace) (sandboxState, error) {
	level, err := f.sandboxLevel(o, cfg)
	if err != nil {
		return sandboxState{}, err
	}
	allNet, hosts, err := netAllow(o, cfg)
	if err != nil {
		return sandboxState{}, err
	}
	if level == sandbox.Off {
		return sandboxState{summary: "off (--sandbox off)",
			warning: "sandbox off: bash commands run unconfined, with everything you can reach (--sandbox off)"}, nil
	}
	rep := sandbox.Probe(ctx, "", f.Environ())
	if !rep.Supported {
		if level == sandbox.Strict {
			return sandboxState{}, fmt.Errorf("--sandbox strict: %s", rep.Summary())
		}
		return sandboxState{summary: "none: " + rep.Summary(), warning: "no sandbox: " + rep.Summary()}, nil
	}
	if level == sandbox.Strict && !rep.Complete() {
		return sandboxState{}, fmt.Errorf("--sandbox strict refuses to run: %s; run decode doctor for details, or use --sandbox auto", rep.Summary())
	}
	st := sandboxState{summary: rep.Summary()}
	_ = sandbox.HideProcess(rep.Layers) // no core file, no /proc/PID/environ for a command, whatever layers there are
	if len(rep.Layers) == 0 {
		st.warning = "no sandbox layer works here, bash commands run unconfined: " + rep.Summary()
		return st, nil
	}
	if !rep.Complete() {
		st.warning = "sandbox is partial: " + rep.Summary()
	}
	env := f.Environ()
	read, write := sandbox.Toolchains(env)
	home := f.Getenv("HOME")
	for _, p := range cfg.Sandbox.Read {
		if rest, ok := strings.CutPrefix(p, "~"); ok && home != "" {
			p = filepath.Join(home, rest)
		}
		if filepath.IsAbs(p) {
			read = append(read, filepath.Clean(p))
		}
	}
	sb := &tools.BashSandbox{Layers: rep.Layers, Roots: ws.Roots(), Read: append(read, sandbox.SystemRead...), Write: write, Net: allNet}
	for _, r := range ws.Roots() {
		w, p, pin := sandbox.GitPaths(r)
		sb.Write, sb.Protected, sb.Pinned = append(sb.Write, w...), append(sb.Protected, p...), append(sb.Pinned, pin...)
	}
	if sb.TempDir, err = os.MkdirTemp("", "decode-sandbox-"); err != nil {
		return sandboxState{}, fmt.Errorf("sandbox temp dir: %w", err)
	}
	switch {
	case sb.Net:
		st.summary += "; host network (allow_net)"
	case len(hosts) > 0 && !sandbox.Has(rep.Layers, sandbox.NetNS):
		st.warning = strings.TrimPrefix(st.warning+"; ", "; ") + "no network namespace, so commands reach the host's network directly, not only the --allow-net hosts"
	case len(hosts) > 0:
		if st.proxy, err = sandbox.StartProxy(hosts); err != nil {
			return sandboxState{}, err
		}
		sb.Proxy = st.proxy.Socket
		names := make([]string, len(hosts))
		for i, h := range hosts {
			names[i] = h.String()
		}
		st.summary += "; network through decode's proxy to " + strings.Join(names, ", ")
	}
	st.bash = sb
	return st, nil
}

// sandboxCheck is decode doctor's line about the sandbox.
func sandboxCheck(ctx context.Context, f *Factory) check {
	rep := sandbox.Probe(ctx, "", f.Environ())
	switch {
	case !rep.Supported:
		return check{"warn", "sandbox: " + rep.Summary(), "commands run unconfined on " + runtime.GOOS + "; use --mode default and narrow allow rules"}
	case rep.Complete():
		return check{"ok", "sandbox: " + rep.Summary(), ""}
	case len(rep.Layers) == 0:
		return check{"warn", "sandbox: " + rep.Summary(), "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run where Landlock is enabled (lsm=landlock)"}
	}
	return check{"warn", "sandbox: " + rep.Summary(), "commands run with the layers there are; --sandbox strict would refuse"}
}
