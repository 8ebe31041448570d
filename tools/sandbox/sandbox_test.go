package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is its own sandbox helper, as decode is; with
// SANDBOX_TEST_DECODE set it plays decode holding a key (see
// TestKeysUnreadableAsNobody).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
	if line := os.Getenv("SANDBOX_TEST_DECODE"); line != "" {
		os.Exit(playDecode(line))
	}
	os.Exit(m.Run())
}

// testKey is the key the stand-in for decode holds in its environment.
const testKey = "sk-CANARYKEY-7f3a9c1d2e4b5a6f"

// probed holds Probe's report, run once per test binary.
var probed *Report

func probe(t testing.TB) Report {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux only")
	}
	if probed == nil {
		r := Probe(context.Background(), "", os.Environ())
		probed = &r
	}
	if !probed.Complete() {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must give every sandbox layer: %s", probed.Summary())
		}
		t.Skipf("not every layer works here: %s", probed.Summary())
	}
	return *probed
}

// workspace makes a git repository with one commit and a directory
// outside it holding a secret.
func workspace(t testing.TB) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("CANARY-outside-91b2\n"), 0o644))
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+base)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, os.MkdirAll(ws, 0o755))
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644))
	git("add", "a.txt")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
	return ws, outside
}

// editSpec is what decode gives a command in edit mode for ws.
func editSpec(t testing.TB, layers []Layer, ws string) Spec {
	t.Helper()
	tmp := t.TempDir()
	read, write := Toolchains(os.Environ())
	w, p, pin := GitPaths(ws)
	return Spec{
		Dir: ws, Layers: layers,
		Env:  []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(ws), "TMPDIR=" + tmp, "GIT_CONFIG_NOSYSTEM=1", testKeyVar()},
		Read: append(append([]string{ws}, read...), SystemRead...), Write: append(append([]string{ws, tmp}, write...), w...),
		Protected: p, Pinned: pin,
	}
}

// testKeyVar is a variable a scrubbed environment would not carry; the
// commands get it only to prove what they can read is their own.
func testKeyVar() string { return "DECODE_TEST=1" }

// run runs line in bash in the sandbox and returns its combined output and
// exit code.
func run(t testing.TB, spec Spec, line string) (string, int) {
	t.Helper()
	spec.Args = []string{"/bin/bash", "-c", line}
	cmd, err := Command(context.Background(), spec)
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), code
}

func TestProbeFindsEveryLayer(t *testing.T) {
	r := probe(t)
	assert.Equal(t, "userns, mountns, pidns, netns, landlock v"+fmt.Sprint(r.LandlockABI)+", seccomp", r.Summary())
}

func TestEditSpecConfinesFiles(t *testing.T) {
	r := probe(t)
	ws, outside := workspace(t)
	spec := editSpec(t, r.Layers, ws)
	out, _ := run(t, spec, `echo hi > b.txt; cat `+outside+`/secret.txt; echo x > `+outside+`/new; ls /tmp >/dev/null && echo tmp-listed; head -c 10 /root/.profile 2>&1 | grep -v Permission; echo done`)
	assert.FileExists(t, filepath.Join(ws, "b.txt"), "the workspace is writable in edit mode")
	assert.NotContains(t, out, "CANARY", "a file outside the workspace was read")
	assert.NoFileExists(t, filepath.Join(outside, "new"), "a file outside the workspace was written")
	assert.NotContains(t, out, "tmp-listed", "/tmp beyond the command's own dir was readable")
	assert.Contains(t, out, "done")
}

func TestReadOnlyAccessKeepsWorkspace(t *testing.T) {
	r := probe(t)
	ws, _ := workspace(t)
	spec := editSpec(t, r.Layers, ws)
	spec.Write = spec.Write[1:] // the workspace out: AccessRead
	out, _ := run(t, spec, `cat a.txt; echo x > b.txt; echo y >> a.txt; echo t > "$TMPDIR/t" && echo tmp-ok`)
	assert.Contains(t, out, "a\n", "the workspace stays readable")
	assert.NoFileExists(t, filepath.Join(ws, "b.txt"))
	data, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	assert.Equal(t, "a\n", string(data))
	assert.Contains(t, out, "tmp-ok", "the command's temp dir stays writable")
}

func TestProtectedPathsHoldWhileGitWorks(t *testing.T) {
	r := probe(t)
	ws, _ := workspace(t)
	config, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	spec := editSpec(t, r.Layers, ws)
	out, _ := run(t, spec, strings.Join([]string{
		`echo '[core] fsmonitor = touch pwned' >> .git/config`,
		`echo x 4<.git/config >>/dev/fd/4`,
		`touch .git/hooks/pre-commit`,
		`mkdir -p .decode && echo 'allow=["bash(*)"]' > .decode/config.toml`,
		`git update-ref refs/decode/sessions/x HEAD`,
		`echo "$(git rev-parse HEAD) refs/decode/y" >> .git/packed-refs`,
		`mv .git .g`, `rm -rf .git/refs/decode`,
		`ln .git/config c && echo x >> c`,
		`echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@t commit -qm second && echo committed`,
	}, "; "))
	t.Log(out)
	after, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	assert.Equal(t, string(config), string(after), ".git/config changed")
	assert.NoFileExists(t, filepath.Join(ws, ".git", "hooks", "pre-commit"))
	assert.NoFileExists(t, filepath.Join(ws, ".decode", "config.toml"))
	assert.NoFileExists(t, filepath.Join(ws, ".git", "refs", "decode", "sessions", "x"))
	packed, _ := os.ReadFile(filepath.Join(ws, ".git", "packed-refs"))
	assert.NotContains(t, string(packed), "refs/decode")
	assert.DirExists(t, filepath.Join(ws, ".git"))
	assert.Contains(t, out, "committed", "git add and commit work in the sandbox")
}

func TestKeysUnreadable(t *testing.T) {
	r := probe(t)
	ws, _ := workspace(t)
	spec := editSpec(t, r.Layers, ws)
	t.Setenv("OPENAI_API_KEY", testKey) // the test process plays decode holding a key
	out, _ := run(t, spec, keyProbe)
	assert.NotContains(t, out, "CANARYKEY", "a command read a key decode holds")
	assert.Contains(t, out, "probed")
}

// keyProbe tries every way to a key decode holds: the environment, every
// /proc/PID/environ, cmdline and mem, the parent's.
const keyProbe = `env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\0' '\n'; ` +
	`cat /proc/$PPID/environ; for p in /proc/[0-9]*; do head -c 100000 $p/mem 2>/dev/null | strings; done; ` +
	`ls /proc | grep -c '^[0-9]'; echo probed`

// TestKeysUnreadableAsNobody runs the same probe from a decode that runs as
// nobody, not root.
func TestKeysUnreadableAsNobody(t *testing.T) {
	probe(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, "sandbox.test")
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SANDBOX_TEST_DECODE=" + keyProbe, "OPENAI_API_KEY=" + testKey, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "layers: userns, mountns, pidns, netns, landlock", "nobody gets every layer too")
	assert.NotContains(t, string(out), "CANARYKEY", "a command read a key decode holds")
	assert.Contains(t, string(out), "probed")
}

// playDecode is the test binary playing decode: probe, then run line in
// the sandbox of its own directory, printing what came out.
func playDecode(line string) int {
	dir, _ := os.Getwd()
	rep := Probe(context.Background(), "", os.Environ())
	fmt.Println("layers:", rep.Summary())
	_ = HideProcess(rep.Layers)
	cmd, err := Command(context.Background(), Spec{
		Args: []string{"/bin/bash", "-c", line}, Dir: dir, Layers: rep.Layers,
		Env:  []string{"PATH=" + os.Getenv("PATH")},
		Read: append([]string{dir}, SystemRead...), Write: []string{dir},
	})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil {
		fmt.Println("command:", err)
	}
	return 0
}

func TestNoNetworkButLoopback(t *testing.T) {
	r := probe(t)
	ws, _ := workspace(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var got atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			got.Add(1)
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	spec := editSpec(t, r.Layers, ws)
	out, _ := run(t, spec, fmt.Sprintf(`(echo hi >/dev/tcp/127.0.0.1/%d) && echo reached; `+
		`command -v curl >/dev/null && curl -sS -m 2 http://127.0.0.1:%d/ && echo reached; `+
		`command -v nc >/dev/null && echo hi | nc -w 1 127.0.0.1 %d && echo reached; echo done`, port, port, port))
	t.Log(out)
	time.Sleep(50 * time.Millisecond)
	assert.Zero(t, got.Load(), "a command reached a listener outside its network namespace")
	assert.NotContains(t, out, "reached")
}

func TestGoTestWithLoopbackServer(t *testing.T) {
	r := probe(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	ws, _ := workspace(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "tiny_test.go"), []byte(`package tiny

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServer(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer s.Close()
	res, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if string(b) != "pong" {
		t.Fatalf("got %q", b)
	}
}
`), 0o644))
	spec := editSpec(t, r.Layers, ws)
	spec.Env = append(spec.Env, "GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, code := run(t, spec, "go test ./...")
	assert.Equal(t, 0, code, "go test in the sandbox: %s", out)
	assert.Contains(t, out, "ok")
}

func goEnv(t testing.TB, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestSymlinkSwapWritesNothingOutside swaps a directory for a symlink to
// outside the workspace while writing through it, for a second.
func TestSymlinkSwapWritesNothingOutside(t *testing.T) {
	r := probe(t)
	ws, outside := workspace(t)
	spec := editSpec(t, r.Layers, ws)
	out, _ := run(t, spec, `mkdir -p real; end=$((SECONDS+1));
(while [ $SECONDS -lt $end ]; do ln -sfn `+outside+` d.tmp && mv -T d.tmp d; rm -f d; mkdir -p d 2>/dev/null; rmdir d 2>/dev/null; done) &
n=0; while [ $SECONDS -lt $end ]; do echo x 2>/dev/null > d/pwned-$n; n=$((n+1)); done; wait; echo tries=$n`)
	t.Log(out)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	for _, e := range entries {
		assert.Equal(t, "secret.txt", e.Name(), "the race wrote outside the workspace")
	}
}

func TestKilledHelperTakesEverythingWithIt(t *testing.T) {
	r := probe(t)
	ws, _ := workspace(t)
	spec := editSpec(t, r.Layers, ws)
	spec.Args = []string{"/bin/bash", "-c", "sleep 300 & sleep 301 & echo started; wait"}
	cmd, err := Command(context.Background(), spec)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	require.NoError(t, cmd.Start())
	buf := make([]byte, 8)
	_, err = pr.Read(buf)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()
	time.Sleep(100 * time.Millisecond)
	out, _ := exec.Command("pgrep", "-f", "sleep 30[01]$").Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "processes of a killed command lived on")
}

// TestEachLayerFallsBack turns each layer off in turn: the report records
// what is missing and why, and the command still runs with the rest.
func TestEachLayerFallsBack(t *testing.T) {
	probe(t)
	for _, l := range AllLayers {
		t.Run(string(l), func(t *testing.T) {
			rep := Probe(context.Background(), "", []string{"DECODE_SANDBOX_DISABLE=" + string(l)})
			assert.NotContains(t, rep.Layers, l)
			assert.Equal(t, "disabled by DECODE_SANDBOX_DISABLE", rep.Missing[l])
			assert.Contains(t, rep.Summary(), "missing: "+string(l)+" (disabled by DECODE_SANDBOX_DISABLE)")
			ws, outside := workspace(t)
			config, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
			spec := editSpec(t, rep.Layers, ws)
			out, _ := run(t, spec, `echo ok >> a.txt; echo pwned >> .git/config; cat `+outside+`/secret.txt; ls /proc | grep -c '^[0-9]'; echo done`)
			assert.Contains(t, out, "done", "the command runs with the layers left")
			data, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
			assert.Equal(t, "a\nok\n", string(data), "the workspace's files stay writable")
			after, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
			if Has(rep.Layers, MountNS) || Has(rep.Layers, Landlock) {
				assert.Equal(t, string(config), string(after), ".git/config is held by the mount namespace or Landlock")
			}
			if Has(rep.Layers, Landlock) {
				assert.NotContains(t, out, "CANARY", "Landlock keeps reads to the workspace")
			} else {
				assert.Contains(t, out, "CANARY", "without Landlock reads are not confined (the fallback is what it says)")
			}
			switch l {
			case UserNS:
				if os.Getuid() == 0 {
					assert.Contains(t, rep.Layers, MountNS, "root keeps the other namespaces without a user namespace")
				}
			case MountNS:
				assert.NotContains(t, rep.Layers, PIDNS, "no own /proc without a mount namespace")
				assert.Equal(t, "needs a mount namespace for its own /proc", rep.Missing[PIDNS])
			}
		})
	}
}

// BenchmarkCommand measures what the sandbox adds to one bash call: the
// same `true` run plain and in the sandbox with every layer.
func BenchmarkCommand(b *testing.B) {
	ws := b.TempDir()
	for _, sandboxed := range []bool{false, true} {
		name := "plain"
		var layers []Layer
		if sandboxed {
			name = "sandboxed"
			layers = probe(b).Layers
		}
		b.Run(name, func(b *testing.B) {
			// DECODE_BIN measures with decode's own binary as the helper
			// (its package init is part of the cost), not this test binary.
			spec := Spec{Args: []string{"/bin/bash", "-c", "true"}, Dir: ws, Layers: layers, Helper: os.Getenv("DECODE_BIN"),
				Env: []string{"PATH=/usr/bin:/bin"}, Read: append([]string{ws}, SystemRead...), Write: []string{ws}}
			for b.Loop() {
				cmd, err := Command(context.Background(), spec)
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
