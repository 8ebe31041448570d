package commands

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserDeps finds headless Chromium and playwright-core (installed by
// .ci/run), skipping the test without them, or failing it under CI.
func browserDeps(t *testing.T) (chromium, playwright string) {
	chromium = os.Getenv("DECODE_TEST_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	playwright = os.Getenv("DECODE_TEST_PLAYWRIGHT")
	if playwright == "" {
		playwright, _ = filepath.Abs("../.ci/cache/playwright/node_modules/playwright-core")
	}
	_, errC := os.Stat(chromium)
	_, errP := os.Stat(filepath.Join(playwright, "package.json"))
	_, errN := exec.LookPath("node")
	if errC != nil || errP != nil || errN != nil {
		msg := "the browser test needs Chromium (apt-get install chromium), node and playwright-core (bash .ci/run installs both)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: chromium %v, playwright-core %v, node %v", msg, errC, errP, errN)
		}
		t.Skip(msg)
	}
	return chromium, playwright
}

// TestServeInBrowser builds decode, serves a repository with a forked
// session and a paused run, and drives the page in headless Chromium:
// the tree and transcript render, Approve and Resume run the CLI, and the
// run reaches done through the live stream.
func TestServeInBrowser(t *testing.T) {
	chromium, playwright := browserDeps(t)
	if testing.Short() {
		t.Skip("builds decode and starts a browser")
	}
	bin := filepath.Join(t.TempDir(), "decode")
	build := exec.Command("go", "build", "-o", bin, "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	b := newServeBed(t) // the repository; its httptest server is not used here
	shots := os.Getenv("DECODE_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0")
	serve.Dir, serve.Env = b.dir, b.env
	serve.Cancel = func() error { return serve.Process.Signal(syscall.SIGINT) }
	serve.WaitDelay = 10 * time.Second
	stderr, err := serve.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, serve.Start())
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		url = regexp.MustCompile(`^http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}$`).FindString(lines.Text())
	}
	require.NotEmpty(t, url, "decode serve prints its URL on stderr")
	go func() {
		for lines.Scan() {
		}
	}()

	node := exec.CommandContext(ctx, "node", filepath.Join("testdata", "serve", "browser.js"))
	node.Env = append(os.Environ(), "SERVE_URL="+url, "DONE="+b.done, "FORK="+b.fork, "PAUSED="+b.paused,
		"SHOTS="+shots, "CHROMIUM="+chromium, "PLAYWRIGHT="+playwright)
	out, err = node.CombinedOutput()
	t.Logf("screenshots in %s", shots)
	require.NoError(t, err, "the page, driven by Chromium:\n%s", out)
	assert.Contains(t, string(out), "ok")

	require.NoError(t, serve.Process.Signal(syscall.SIGINT))
	assert.NoError(t, serve.Wait(), "decode serve stops cleanly on SIGINT")
	assert.NoFileExists(t, filepath.Join(b.dir, "notes.txt"), "the approved call ran")
	log, errOut, code := decodeRun(t, b.dir, b.env, "", "log", b.paused)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, log, "Removed it.")
	for _, f := range []string{"tree.png", "paused.png", "done.png", "done-dark.png"} {
		assert.FileExists(t, filepath.Join(shots, f))
	}
}
