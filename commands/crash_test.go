package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/session"
)

// crashSteps is how many side effects the scripted session has: each step
// is a bash call appending its name to a ledger file, next to a read-only
// call that may safely run again.
const crashSteps = 5

func crashScript() string {
	var rs []string
	for i := 1; i <= crashSteps; i++ {
		rs = append(rs, fmt.Sprintf(`{"calls": [{"name": "glob", "args": {"pattern": "*.txt"}}, {"name": "bash", "args": {"command": "echo step%d >> ledger.txt"}}]}`, i))
	}
	rs = append(rs, `{"text": "All steps done."}`)
	return `{"responses": [` + strings.Join(rs, ",\n") + `]}`
}

// crashEnv is the hermetic environment the end-to-end scripts get.
func crashEnv(dir string) []string {
	home := filepath.Join(dir, ".home")
	return append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".state"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
}

// crashRepo is one trial's repository.
type crashRepo struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

func newCrashRepo(t *testing.T, bin string) *crashRepo {
	dir := t.TempDir()
	r := &crashRepo{t: t, bin: bin, dir: dir, env: crashEnv(dir)}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".home"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.json"), []byte(crashScript()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir, cmd.Env = dir, r.env
	require.NoError(t, cmd.Run())
	return r
}

// start runs decode: a new run while there is no session yet, else a resume.
func (r *crashRepo) start() (*exec.Cmd, *bytes.Buffer) {
	args := []string{"run", "--mode", "bypass", "-m", "script:script.json", "follow the steps"}
	if r.hasSession() {
		args = []string{"resume", "--mode", "bypass", "@"}
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(r.t, cmd.Start())
	return cmd, &out
}

func (r *crashRepo) store() *session.Store {
	st, err := session.OpenStore(r.dir, session.Env{Getenv: func(k string) string {
		for _, kv := range r.env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}, Home: filepath.Join(r.dir, ".home")})
	require.NoError(r.t, err)
	return st
}

func (r *crashRepo) hasSession() bool {
	infos, err := r.store().List(context.Background())
	require.NoError(r.t, err)
	return len(infos) > 0
}

// killAt runs decode and kills it with SIGKILL after d, unless it ended.
// It reports whether the run finished by itself with exit 0.
func (r *crashRepo) killAt(d time.Duration) bool {
	cmd, out := r.start()
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	err := cmd.Wait()
	timer.Stop()
	if err == nil {
		return true
	}
	ee, ok := err.(*exec.ExitError)
	require.True(r.t, ok, "decode failed to run: %v", err)
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return false
	}
	if ee.ExitCode() == ExitUsage && strings.Contains(out.String(), "nothing to continue") {
		return true // killed after the final answer was logged, before the end entry
	}
	r.t.Fatalf("decode exited %d, not by the kill:\n%s", ee.ExitCode(), out)
	return false
}

// check asserts the trial's invariants: the session is valid JSONL whose
// every call has exactly one result, and every step's side effect happened
// at most once, exactly once when its result is logged.
func (r *crashRepo) check() {
	t := r.t
	infos, err := r.store().List(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 1, "one session across all the resumes")
	s, err := r.store().Open(context.Background(), infos[0].ID)
	require.NoError(t, err)
	assert.Empty(t, s.Problems(), "every line of the session is valid")
	data, err := s.JSONL(context.Background())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		var e session.Entry
		require.NoError(t, json.Unmarshal([]byte(line), &e), "line %d", i+1)
		assert.Equal(t, i+1, e.ID, "ids are consecutive")
	}

	ledger, _ := os.ReadFile(filepath.Join(r.dir, "ledger.txt"))
	counts := map[string]int{}
	for _, l := range strings.Fields(string(ledger)) {
		counts[l]++
	}
	results := map[string][]session.ToolResultData{}
	var calls []string
	commands := map[string]string{}
	for _, e := range s.Entries() {
		switch e.Type {
		case session.TypeAssistant:
			var d session.AssistantData
			require.NoError(t, e.Decode(&d))
			for _, c := range d.Message.Calls {
				calls = append(calls, c.ID)
				var a struct{ Command string }
				_ = json.Unmarshal(c.Args, &a)
				commands[c.ID] = a.Command
			}
		case session.TypeToolResult:
			var d session.ToolResultData
			require.NoError(t, e.Decode(&d))
			results[d.CallID] = append(results[d.CallID], d)
		}
	}
	for _, id := range calls {
		require.Len(t, results[id], 1, "call %s has exactly one result", id)
		cmd := commands[id]
		if cmd == "" {
			continue
		}
		step := strings.Fields(cmd)[1]
		if strings.Contains(results[id][0].Content, "interrupted") {
			assert.LessOrEqual(t, counts[step], 1, "%s ran at most once", step)
		} else {
			assert.Equal(t, 1, counts[step], "%s ran exactly once (its result is logged)", step)
		}
	}
	assert.Len(t, calls, 2*crashSteps, "every step was asked for once")
	for step, n := range counts {
		assert.LessOrEqual(t, n, 1, "%s ran at most once", step)
	}
	last := s.Entries()[len(s.Entries())-1]
	if last.Type != session.TypeAssistant {
		assert.Equal(t, session.Status("done"), infos[0].Status, "the session ends done (or was killed right after its answer)")
	}
}

// TestKillAnywhereThenResume kills a real decode process with SIGKILL at
// random points of a scripted multi-step session, resumes it (sometimes
// killing the resume too) until it finishes, and checks that no side
// effect ever happened twice and that the session stayed valid.
func TestKillAnywhereThenResume(t *testing.T) {
	bin, err := exec.LookPath("decode")
	require.NoError(t, err, "TestMain puts decode on PATH")
	trials := 50
	if testing.Short() {
		trials = 8
	}

	// An undisturbed run measures how long the whole session takes.
	clean := newCrashRepo(t, bin)
	began := time.Now()
	require.True(t, clean.killAt(time.Hour), "the script runs to its end")
	span := time.Since(began)
	clean.check()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, an undisturbed run takes %s", seed, span)
	rng := rand.New(rand.NewPCG(seed, 1))
	delays := make([][]time.Duration, trials)
	for i := range delays {
		// The first kill lands anywhere in the run; resumes are killed
		// again, at random, half of the time.
		delays[i] = append(delays[i], time.Duration(rng.Int64N(int64(span))))
		for rng.IntN(2) == 0 && len(delays[i]) < 4 {
			delays[i] = append(delays[i], time.Duration(rng.Int64N(int64(span))))
		}
	}
	var wg sync.WaitGroup
	work := make(chan int)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				t.Run(fmt.Sprintf("trial%02d", i), func(t *testing.T) {
					r := newCrashRepo(t, bin)
					for _, d := range delays[i] {
						if r.killAt(d) {
							break
						}
					}
					for n := 0; !r.killAt(time.Hour); n++ {
						require.Less(t, n, 3, "a resume without a kill finishes")
					}
					r.check()
				})
			}
		}()
	}
	// Slow builds (-race) get fewer trials: the test stays within ~20 s.
	deadline := time.Now().Add(15 * time.Second)
	ran := 0
	for i := range trials {
		if i >= 10 && time.Now().After(deadline) {
			break
		}
		work <- i
		ran++
	}
	close(work)
	wg.Wait()
	t.Logf("%d trials", ran)
}
