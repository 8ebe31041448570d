package commands

import (
	"bufio"
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildKeyringHelper builds cmd/decode-keyring, the program that links
// github.com/99designs/keyring, into dir.
func buildKeyringHelper(t *testing.T, dir string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	out := filepath.Join(dir, "decode-keyring")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/decode-keyring")
	cmd.Dir = filepath.Dir(filepath.Dir(here))
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/decode-keyring: %s", b)
	return out
}

// TestEncryptedFileKeyStoreEndToEnd runs the decode binary: auth login
// reads a key from stdin into the encrypted file backend, auth status names
// that backend, a run sends the stored key to a local OpenAI server, and
// auth logout removes it. Without the passphrase decode refuses, naming
// DECODE_KEYRING_PASSPHRASE, and never prompts.
func TestEncryptedFileKeyStoreEndToEnd(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "testscript puts decode on PATH")
	dir := t.TempDir()
	helper := buildKeyringHelper(t, dir)
	srv := &fakeOpenAI{answer: "Done.", command: "echo hi"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const key = "sk-file-store-0123456789abcdef"
	state := filepath.Join(dir, "state")
	ring := filepath.Join(state, "decode", "keyring")
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": dir, "XDG_STATE_HOME": state, "XDG_CONFIG_HOME": filepath.Join(dir, ".config"),
		"DECODE_STORE": filepath.Join(dir, "store"), "OPENAI_BASE_URL": ts.URL + "/v1",
		"DECODE_KEYRING_HELPER": helper, "DECODE_KEYRING_PASSPHRASE": "correct horse battery staple",
		// The kernel keyring comes before the file: keep the file only.
		"DECODE_KEYRING_BACKEND": "file",
	}
	decode := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return out.String(), errb.String(), code
	}

	_, errs, code := decode(key+"\n", "auth", "login", "openai")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "stored the openai key in the encrypted file ("+ring+")")
	fi, err := os.Stat(ring)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	data, err := os.ReadFile(filepath.Join(ring, "openai"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), key, "the file is encrypted")
	assert.NotContains(t, string(data), "sk-file", "the file is encrypted")

	status, errs, code := decode("", "auth", "status")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?m)^openai\s+encrypted file \(`+ring+`\)$`, status)

	out, errs, code := decode("", "run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", "go")
	require.Equal(t, 0, code, "%s%s", out, errs)
	assert.Equal(t, "Done.\n", out)
	require.NotEmpty(t, srv.auths)
	assert.Equal(t, "Bearer "+key, srv.auths[len(srv.auths)-1], "the run used the stored key")

	// Without the passphrase (and stdin not a terminal): refused, named.
	delete(env, "DECODE_KEYRING_PASSPHRASE")
	before := len(srv.auths)
	out, errs, code = decode("", "run", "-m", "openai:gpt-4.1-mini", "go")
	assert.Equal(t, ExitProvider, code, "%s%s", out, errs)
	assert.Contains(t, errs, "DECODE_KEYRING_PASSPHRASE")
	assert.Equal(t, before, len(srv.auths), "no request without a key")
	_, errs, code = decode("sk-other-0123456789\n", "auth", "login", "anthropic")
	assert.Equal(t, ExitError, code, errs)
	assert.Contains(t, errs, "set DECODE_KEYRING_PASSPHRASE")
	assert.NoFileExists(t, filepath.Join(ring, "anthropic"))
	// A wrong one does not decrypt.
	env["DECODE_KEYRING_PASSPHRASE"] = "wrong"
	_, errs, code = decode("", "run", "-m", "openai:gpt-4.1-mini", "go")
	assert.Equal(t, ExitProvider, code, errs)
	assert.NotContains(t, errs, key)
	env["DECODE_KEYRING_PASSPHRASE"] = "correct horse battery staple"

	_, errs, code = decode("", "auth", "logout", "openai")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "removed the openai key from the encrypted file ("+ring+")")
	assert.NoFileExists(t, filepath.Join(ring, "openai"))
	status, _, _ = decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+no key`, status)
}

// TestSecretServiceEndToEnd starts a private session bus and gnome-keyring
// (unlocked with a known password) and runs the decode binary against it:
// auth login stores the key in the Secret Service, auth status names it, a
// run sends it to a local server, auth logout removes it.
func TestSecretServiceEndToEnd(t *testing.T) {
	for _, prog := range []string{"dbus-daemon", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (.ci/run installs dbus-daemon and gnome-keyring)", prog)
			}
			t.Skipf("%s is not installed (apt-get install dbus-daemon gnome-keyring)", prog)
		}
	}
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "testscript puts decode on PATH")
	dir := t.TempDir()
	helper := buildKeyringHelper(t, dir)
	run := filepath.Join(dir, "run")
	require.NoError(t, os.MkdirAll(run, 0o700))

	// A bus of our own with no service directories: with the system's
	// session config, a call that reached the bus before gnome-keyring took
	// its name made D-Bus start a second, locked gnome-keyring
	// (org.freedesktop.secrets.service), and every later login failed.
	conf := filepath.Join(dir, "bus.conf")
	require.NoError(t, os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(run, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600))
	bus := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=1")
	busOut, err := bus.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, bus.Start())
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	line, err := bufio.NewReader(busOut).ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(line)
	base := []string{"HOME=" + dir, "XDG_RUNTIME_DIR=" + run, "DBUS_SESSION_BUS_ADDRESS=" + addr, "PATH=" + os.Getenv("PATH")}
	gk := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	gk.Env = base
	gk.Stdin = strings.NewReader("test-password")
	require.NoError(t, gk.Start())
	t.Cleanup(func() { gk.Process.Kill(); gk.Wait() })

	srv := &fakeOpenAI{answer: "Done.", command: "echo hi"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const key = "sk-secret-service-0123456789"
	decode := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, base...), "DECODE_STORE="+filepath.Join(dir, "store"), "OPENAI_BASE_URL="+ts.URL+"/v1",
			"DECODE_KEYRING_HELPER="+helper, "DECODE_KEYRING_BACKEND=secret-service", "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return out.String(), errb.String(), code
	}
	// gnome-keyring takes its name on the bus shortly after it starts; on a
	// loaded 2-core CI machine that has taken over 10 s.
	var errs string
	var code int
	require.Eventually(t, func() bool {
		_, errs, code = decode(key+"\n", "auth", "login", "openai")
		return code == 0
	}, 60*time.Second, 250*time.Millisecond, "auth login: %s", errs)
	assert.Contains(t, errs, "stored the openai key in the Secret Service")
	status, errs, code := decode("", "auth", "status")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?m)^openai\s+Secret Service$`, status)
	out, errs, code := decode("", "run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", "go")
	require.Equal(t, 0, code, "%s%s", out, errs)
	assert.Equal(t, "Bearer "+key, srv.auths[len(srv.auths)-1], "the run used the key from the Secret Service")
	_, errs, code = decode("", "auth", "logout", "openai")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "removed the openai key from the Secret Service")
	status, _, _ = decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+no key`, status)
}
