package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"decode/tools/sandbox"

	"decode/tools/mcp/mcptest"
)

// TestMain lets testscript run the test binary as the `decode` command, so
// the end-to-end scripts exercise the same Main as the real binary, in a
// separate process with real stdin, stdout, stderr and exit codes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"decode":  func() { os.Exit(Main(os.Args, NewFactory("test"))) },
		"mcptest": func() { os.Exit(mcptest.Main(os.Args[1])) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script"))
}

// scriptParams are the end-to-end scripts' settings: a hermetic home and
// git identity, and the exits command.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_AUTHOR_NAME", "Test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
			env.Setenv("GIT_COMMITTER_NAME", "Test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
			env.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(env.WorkDir))
			return os.MkdirAll(home, 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":    cmdExits,
			"upstream": cmdUpstream,
			"openai":   cmdOpenAI,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" { // the command sandbox confines files here
				return sandbox.Has(sandbox.Probe(context.Background(), "", os.Environ()).Layers, sandbox.Landlock), nil
			}
			if prog, ok := strings.CutPrefix(cond, "installed:"); ok {
				return installed(prog)
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	}
}

// installed is the condition [installed:PROG], for a program a script
// drives (a shell): whether it is on PATH, and an error that fails the
// script when it is missing under CI, since .ci/run installs it.
func installed(prog string) (bool, error) {
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("%s is not installed; CI must run this script (.ci/run installs it)", prog)
		}
		return false, nil
	}
	return true, nil
}

// cmdExits runs a command and checks its exact exit code:
// exits CODE PROG ARGS...
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdUpstream starts a web server on 127.0.0.1 that answers every request
// with BODY, for the script's life, and sets NAME to its host:port:
// upstream NAME BODY
func cmdUpstream(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: upstream NAME BODY")
	}
	body := args[1]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body+"\n") }))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], strings.TrimPrefix(srv.URL, "http://"))
}

// cmdOpenAI starts a server on 127.0.0.1 that speaks OpenAI's chat
// completions stream (fakeOpenAI: a bash call of COMMAND first, then
// ANSWER), for the script's life, and sets NAME to its host:port:
// openai NAME COMMAND ANSWER
func cmdOpenAI(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: openai NAME COMMAND ANSWER")
	}
	srv := httptest.NewServer(&fakeOpenAI{command: args[1], answer: args[2]})
	ts.Defer(srv.Close)
	ts.Setenv(args[0], strings.TrimPrefix(srv.URL, "http://"))
}
