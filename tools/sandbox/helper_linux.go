package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// helperFailed is the helper's exit status when it could not set up a
// layer it was asked for; the command did not run.
const helperFailed = 125

// HelperMain is the sandbox helper: args are what follows HelperArg. It
// applies the layers to itself on one locked thread, starts the command
// from that thread (so the command inherits them), waits for it as the
// PID namespace's init, and returns the command's exit status.
func HelperMain(args []string) int {
	runtime.LockOSThread() // never unlocked: the restricted thread dies with us
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "decode sandbox: the helper needs a specification")
		return helperFailed
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "decode sandbox: bad specification: %v\n", err)
		return helperFailed
	}
	inherited := inheritedFiles()
	if len(args) > 1 && args[1] == "probe" {
		return probeHelper(spec)
	}
	if err := setUp(spec); err != nil {
		fmt.Fprintf(os.Stderr, "decode sandbox: %v\n", err)
		return helperFailed
	}
	path, err := lookPath(spec.Args[0], spec.Env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "decode sandbox: %s: %v\n", spec.Args[0], err)
		return 127
	}
	cmd := exec.Command(path, spec.Args[1:]...)
	cmd.Args[0] = spec.Args[0]
	cmd.Env = append([]string{}, spec.Env...)
	if spec.ProxySocket != "" && Has(spec.Layers, NetNS) {
		port, err := forwardProxy(spec.ProxySocket)
		if err != nil {
			fmt.Fprintf(os.Stderr, "decode sandbox: network proxy: %v\n", err)
			return helperFailed
		}
		cmd.Env = append(cmd.Env, ProxyEnv(port)...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = inherited
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "decode sandbox: start %s: %v\n", spec.Args[0], err)
		return 126
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	return waitAsInit(cmd.Process.Pid)
}

// setUp applies the layers of spec to the calling thread, in order:
// mounts, loopback, capabilities dropped, Landlock, seccomp.
func setUp(spec Spec) error {
	if Has(spec.Layers, MountNS) {
		if err := setUpMounts(spec); err != nil {
			return err
		}
	}
	if Has(spec.Layers, NetNS) {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up loopback: %w", err)
		}
	}
	dropCapabilities()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if Has(spec.Layers, Landlock) {
		if err := applyLandlock(spec); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if Has(spec.Layers, Seccomp) {
		if err := applySeccomp(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

// waitAsInit reaps every process that ends (orphans come to the PID
// namespace's init) until the command ends, and returns its status.
func waitAsInit(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return helperFailed
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// inheritedFiles returns the descriptors from 3 up the helper inherited
// (those without close-on-exec), to pass on at the same numbers.
func inheritedFiles() []*os.File {
	var files []*os.File
	last := 0
	for fd := 3; fd < 64; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		for len(files) < fd-3 {
			files = append(files, nil)
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
		last = len(files)
	}
	return files[:last]
}

// setUpMounts keeps our mounts to ourselves, gives the PID namespace its
// own /proc and makes the protected paths read-only.
func setUpMounts(spec Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if Has(spec.Layers, PIDNS) {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount a fresh /proc: %w", err)
		}
	}
	for _, p := range spec.Pinned {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("pin %s: %w", p, err)
		}
	}
	for _, p := range spec.Protected {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bindReadOnly(p); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// bindReadOnly bind-mounts p on itself and remounts it read-only, keeping
// the flags the kernel locks for a less privileged mount namespace.
func bindReadOnly(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", p, "", flags, "")
}

// loopbackUp brings up lo in the new network namespace, so local servers
// work while nothing else is reachable.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// dropCapabilities clears this thread's ambient capabilities and, for a
// root helper, the bounding set, so the command gets none of the
// helper's set-up rights.
func dropCapabilities() {
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if c == unix.CAP_DAC_OVERRIDE || c == unix.CAP_DAC_READ_SEARCH || c == unix.CAP_CHOWN || c == unix.CAP_FOWNER ||
			c == unix.CAP_SETUID || c == unix.CAP_SETGID || c == unix.CAP_KILL {
			continue // a root command keeps root's ordinary file rights in its own namespaces
		}
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
}

// devices are the device files every command may write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// landlockConfig restricts every file access right of ABI 7 and the IPC
// scopes (signals and abstract sockets outside the sandbox), and leaves
// the network to the network namespace.
func landlockConfig() landlock.Config {
	return landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}.BestEffort()
}

// applyLandlock confines the thread's files to spec.Read and spec.Write.
func applyLandlock(spec Spec) error {
	rules := []landlock.Rule{
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts", "/dev/shm").WithIoctlDev().IgnoreIfMissing(),
	}
	read, write := spec.Read, spec.Write
	if spec.Unconfined {
		if Has(spec.Layers, MountNS) || len(spec.Protected) == 0 {
			return nil // the read-only mounts hold the protected paths
		}
		read, write = nil, []string{"/"}
	}
	if !Has(spec.Layers, MountNS) {
		rw, ro := split(write, spec.Protected)
		read, write = append(append([]string{}, read...), ro...), rw
	}
	for _, p := range read {
		rules = append(rules, pathRule(p, false))
	}
	for _, p := range write {
		rules = append(rules, pathRule(p, true))
	}
	fd, flags, err := landlockConfig().NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return fmt.Errorf("not supported by this kernel")
	}
	defer unix.Close(fd)
	return llsys.LandlockRestrictSelf(fd, flags)
}

// pathRule grants a directory or a file, read-only or read-write.
func pathRule(p string, write bool) landlock.Rule {
	fi, err := os.Stat(p)
	dir := err != nil || fi.IsDir()
	switch {
	case dir && write:
		return landlock.RWDirs(p).WithRefer().IgnoreIfMissing()
	case dir:
		return landlock.RODirs(p).IgnoreIfMissing()
	case write:
		return landlock.RWFiles(p).IgnoreIfMissing()
	}
	return landlock.ROFiles(p).IgnoreIfMissing()
}

// deniedSyscalls are the calls a command never needs and an attacker
// wants: reading other processes, kernel keyrings, io_uring (which
// bypasses seccomp), mounts and new namespaces, BPF and perf.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns", "chroot",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"swapon", "swapoff", "reboot", "syslog", "acct", "quotactl",
}

// applySeccomp installs the filter on the calling thread; the command
// inherits it.
func applySeccomp() error {
	if !seccomp.Supported() {
		return fmt.Errorf("not supported by this kernel")
	}
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedSyscalls}},
		},
	})
}

// probeHelper tries each layer it was started with and prints a Report.
func probeHelper(spec Spec) int {
	rep := Report{Supported: true, Missing: map[Layer]string{}}
	have := func(l Layer, err error) {
		if err != nil {
			rep.Missing[l] = err.Error()
			return
		}
		rep.Layers = append(rep.Layers, l)
	}
	if Has(spec.Layers, UserNS) {
		have(UserNS, nil)
	}
	mountsOK := false
	if Has(spec.Layers, MountNS) {
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		if err == nil {
			err = probeReadOnlyBind()
		}
		mountsOK = err == nil
		have(MountNS, err)
	}
	if Has(spec.Layers, PIDNS) {
		var err error
		if !mountsOK {
			err = fmt.Errorf("needs the mount namespace for its own /proc")
		} else if err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			err = fmt.Errorf("mount a fresh /proc: %w", err)
		}
		have(PIDNS, err)
	}
	if Has(spec.Layers, NetNS) {
		have(NetNS, loopbackUp())
	}
	dropCapabilities()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		rep.Missing[Landlock] = "no_new_privs: " + err.Error()
		rep.Missing[Seccomp] = "no_new_privs: " + err.Error()
	} else {
		if Has(spec.Layers, Landlock) {
			rep.LandlockABI = LandlockABI()
			err := applyLandlock(Spec{Read: []string{"/"}})
			if err == nil && rep.LandlockABI == 0 {
				err = fmt.Errorf("not supported by this kernel")
			}
			if err == nil {
				p := filepath.Join(os.TempDir(), fmt.Sprintf("decode-probe-%d", os.Getpid()))
				if werr := os.WriteFile(p, nil, 0o600); werr == nil {
					os.Remove(p)
					err = fmt.Errorf("a write outside the rules went through")
				}
			}
			have(Landlock, err)
		}
		if Has(spec.Layers, Seccomp) {
			err := applySeccomp()
			if err == nil {
				if _, _, e := unix.Syscall(unix.SYS_KEYCTL, 0, 0, 0); e != unix.EPERM {
					err = fmt.Errorf("the filter did not hold (keyctl: %v)", e)
				}
			}
			have(Seccomp, err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return helperFailed
	}
	return 0
}

// probeReadOnlyBind checks that a read-only bind mount holds, on a
// directory of its own that it removes.
func probeReadOnlyBind() error {
	d, err := os.MkdirTemp("", "decode-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(d)
	if err := bindReadOnly(d); err != nil {
		return err
	}
	defer unix.Unmount(d, unix.MNT_DETACH)
	if f, err := os.CreateTemp(d, "x"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("a read-only bind mount stayed writable")
	}
	return nil
}

// forwardProxy listens on a loopback port of the command's network
// namespace and forwards each connection to decode's proxy at socket. The
// goroutines run on threads other than the helper's locked, restricted
// one, so they keep the reach of the helper before its set-up.
func forwardProxy(socket string) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("unix", socket)
				if err != nil {
					c.Close()
					return
				}
				pipe(c, up)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
