package commands

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProxyRunHoldsNoKey runs decode proxy with the key, and a worker — a
// separate decode process — with DECODE_PROXY and no key: the provider gets
// the real key, and a tool reading the worker's /proc environ finds none.
func TestProxyRunHoldsNoKey(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "testscript puts decode on PATH")
	const key = "sk-held-by-the-proxy-0123456789"
	srv := &fakeOpenAI{answer: "Done.", command: `env; tr '\0' '\n' < /proc/self/environ; echo END-OF-ENV; tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null; true`}
	up := httptest.NewServer(srv)
	defer up.Close()

	dir, err := os.MkdirTemp("", "dpx")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "p.sock")
	pf, _, perr := providerTestFactory(t, map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": up.URL + "/v1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proxyRun(ctx, &ProxyOptions{F: pf, Listen: "unix:" + sock}) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 5*time.Second, 10*time.Millisecond, "the proxy listens: %s", perr)
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the user can reach the socket")

	work := filepath.Join(dir, "w")
	require.NoError(t, os.MkdirAll(work, 0o755))
	cmd := exec.Command(bin, "run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", "show the environment")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DECODE_STORE=" + filepath.Join(dir, "store"), "DECODE_PROXY=unix:" + sock}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "the worker: %s", errb.String())
	assert.Equal(t, "Done.\n", out.String())
	require.Len(t, srv.auths, 2)
	assert.Equal(t, []string{"Bearer " + key, "Bearer " + key}, srv.auths, "the proxy put the key in")
	toolResult := srv.bodies[1]
	assert.Contains(t, toolResult, "END-OF-ENV", "the tool read the environments")
	assert.NotContains(t, toolResult, key, "no key in the worker's or the tool's environment")
	assert.NotContains(t, strings.Join(srv.bodies, ""), "sk-held", "nor anywhere the worker sent")
}
