package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// TestACPSignal runs the built decode acp and sends it SIGTERM while a
// prompt waits on the model: the prompt is cancelled, its session saved
// and unlocked, and decode exits 130 without waiting for stdin to close.
func TestACPSignal(t *testing.T) {
	bin := decodeBinary(t)
	dir, env := acpRepo(t, `{"responses": [{"text": "slow", "delay_ms": 60000}]}`)
	cmd := exec.Command(bin, "acp", "-m", "script:"+filepath.Join(dir, "script.json"))
	cmd.Dir = dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)

	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q}}`+"\n", dir)
	require.True(t, lines.Scan(), "an answer to session/new")
	var resp struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(lines.Bytes(), &resp))
	id := resp.Result.SessionID
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"wait"}]}}`+"\n", id)
	time.Sleep(500 * time.Millisecond) // the model request is under way
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "decode acp exits with a code: %v", err)
		assert.Equal(t, 130, ee.ExitCode())
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("decode acp did not exit on SIGTERM")
	}
	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err, "the session was saved")
	es := s.Entries()
	assert.Equal(t, session.TypeEnd, es[len(es)-1].Type)
	require.NoError(t, s.Lock(), "the session lock is released")
	require.NoError(t, s.Unlock())
}

// decodeBinary is the decode command TestMain puts first in $PATH: this
// test binary, which runs Main when called as decode.
func decodeBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "TestMain puts decode in $PATH")
	return bin
}
