package commands

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// decodeIn runs the decode binary in r's repository and returns its output
// and exit code.
func (r *crashRepo) decodeIn(args ...string) (string, int) {
	cmd := exec.Command(r.bin, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(r.t, err)
	}
	return out.String(), code
}

// reached reports whether the repository's only session has an entry of
// type typ yet, read in this process so that polling is quick.
func (r *crashRepo) reached(typ string) bool {
	st := r.store()
	infos, err := st.List(context.Background())
	if err != nil || len(infos) == 0 {
		return false
	}
	s, err := st.Open(context.Background(), infos[0].ID)
	if err != nil {
		return false
	}
	for _, e := range s.Entries() {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// TestDeadWriterIsCrashedThenResumed: a run killed with SIGKILL, or by
// SIGPIPE when `| head` stops reading its --json events, leaves its session running with no
// writer; decode log shows it as crashed and decode resume finishes it.
func TestDeadWriterIsCrashedThenResumed(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "the test binary provides decode (see TestMain)")
	// The killed run's command sleeps long enough that a loaded machine
	// still sees its tool_call before it ends; the SIGPIPE run must finish
	// its command to write the event that breaks the pipe, so it is short.
	scriptFor := func(sleep string) string {
		return `{"responses": [
  {"text": "Starting a long answer that goes on for a while. ", "calls": [{"name": "bash", "args": {"command": "sleep ` + sleep + `"}}]},
  {"text": "Done after the wait."}
]}`
	}
	for _, how := range []string{"sigkill", "sigpipe"} {
		t.Run(how, func(t *testing.T) {
			r := newCrashRepo(t, bin)
			script := scriptFor("1.5")
			if how == "sigkill" {
				script = scriptFor("8")
			}
			require.NoError(t, os.WriteFile(filepath.Join(r.dir, "wait.json"), []byte(script), 0o644))
			run := []string{"run", "--mode", "bypass", "--sandbox", "off", "-m", "script:wait.json", "wait a bit"}
			if how == "sigkill" {
				cmd := exec.Command(bin, run...)
				cmd.Dir, cmd.Env = r.dir, r.env
				require.NoError(t, cmd.Start())
				deadline := time.Now().Add(20 * time.Second)
				for !r.reached(session.TypeToolCall) {
					require.True(t, time.Now().Before(deadline), "the run never reached its bash call")
					time.Sleep(10 * time.Millisecond)
				}
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				_ = cmd.Wait()
			} else {
				// --json writes each event as it happens; the reader stops at
				// the tool call (as `| head` would), and the next event's
				// write gets SIGPIPE in the middle of the run.
				cmd := exec.Command("sh", append([]string{"-c", `"$0" "$@" | grep -q -m1 tool_call`, bin, "run", "--json"}, run[1:]...)...)
				cmd.Dir, cmd.Env = r.dir, r.env
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			list, code := r.decodeIn("log")
			require.Equal(t, 0, code, list)
			assert.Regexp(t, `crashed +1  wait a bit`, list, "a session whose writer died is crashed, not running")

			out, code := r.decodeIn("resume", "@")
			assert.Equal(t, 0, code, "resume continues the crashed session:\n%s", out)
			assert.Contains(t, out, "Done after the wait.")
			list, _ = r.decodeIn("log")
			assert.Regexp(t, `done +1  wait a bit`, list)
		})
	}
}
