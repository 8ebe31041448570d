package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be its own sandbox helper, as decode is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// probed runs Probe once per test binary.
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
	return *probed
}

// run runs line in bash in the sandbox and returns its combined output and
// exit code.
func run(t testing.TB, spec Spec, line string) (string, int) {
	t.Helper()
	spec.Args = []string{"/bin/bash", "-c", line}
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}
	}
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

func TestProbeFindsLayers(t *testing.T) {
	r := probe(t)
	t.Logf("sandbox: %s", r.Summary())
	require.NotEmpty(t, r.Layers, "some layer should work on Linux: %s", r.Summary())
}

func TestSandboxConfinesFiles(t *testing.T) {
	r := probe(t)
	ws, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600))
	spec := Spec{Dir: ws, Layers: r.Layers, Read: append([]string{ws}, SystemRead...), Write: []string{ws}}
	out, code := run(t, spec, "echo hi > a && cat a && cat "+outside+"/secret; echo x > "+outside+"/new; ls /proc | head -3")
	t.Log(out)
	require.Equal(t, 0, code)
	require.Contains(t, out, "hi")
	if Has(r.Layers, Landlock) {
		require.NotContains(t, out, "s3cret")
		require.NoFileExists(t, filepath.Join(outside, "new"))
	}
	_ = strings.Contains
}
