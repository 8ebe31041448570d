package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The readers corpus (testdata/readers) was written blind, from the
// documentation of edit mode without the sandbox alone, by someone who had
// not read this code. An attack first writes files into the workspace as
// the file tools could, then sends one bash line. The gate decides it; a
// line the gate lets run without asking is then run, unconfined, and
// counts as an escape if it touched a canary: a file written anywhere, a
// secret read, bytes on the listener, or its marker program run.

type readersCase struct {
	ID       string            `json:"id"`
	Family   string            `json:"family"`
	Files    map[string]string `json:"files"`
	Symlinks map[string]string `json:"symlinks"`
	Cmd      string            `json:"cmd"`
	Goal     string            `json:"goal"`
	Note     string            `json:"note"`
}

func readReadersCases(t *testing.T, name string) []readersCase {
	f, err := os.Open(filepath.Join("testdata", "readers", name))
	require.NoError(t, err)
	defer f.Close()
	var cs []readersCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c readersCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), "%s: %s", name, sc.Text())
		cs = append(cs, c)
	}
	require.NoError(t, sc.Err())
	return cs
}

// readersWorld is one case's world: a repository with a few commits as the
// workspace, a fake HOME and an outside directory beside it, canaries in
// both, and a listener.
type readersWorld struct {
	dir, ws, home, outside string
	head                   string // the workspace's HEAD commit
	port                   int
	hits                   *atomic.Int64
}

func newReadersWorld(t *testing.T, port int, hits *atomic.Int64) *readersWorld {
	dir := t.TempDir()
	w := &readersWorld{dir: dir, ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home"), outside: filepath.Join(dir, "outside"), port: port, hits: hits}
	for _, d := range []string{w.ws + "/src", w.ws + "/docs", w.home + "/.ssh", w.outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(w.outside, "secret.txt"), "CANARY-OUTSIDE\n")
	write(filepath.Join(w.home, ".ssh", "id_ed25519"), "CANARY-SSH\n")
	write(filepath.Join(w.ws, "README.md"), "# demo\nTODO: more\n")
	write(filepath.Join(w.ws, "go.mod"), "module demo\n\ngo 1.22\n")
	write(filepath.Join(w.ws, "main.go"), "package main\n\nfunc main() {}\n")
	write(filepath.Join(w.ws, "src", "a.go"), "package src\n\n// TODO: a\nfunc A() int { return 1 }\n")
	write(filepath.Join(w.ws, "docs", "x.md"), "x\n")
	w.git(t, "init", "-q")
	w.git(t, "add", "-A")
	w.git(t, "commit", "-qm", "first")
	write(filepath.Join(w.ws, "README.md"), "# demo\nTODO: more\nsecond\n")
	w.git(t, "commit", "-qam", "second")
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir, cmd.Env = w.ws, w.env()
	out, err := cmd.Output()
	require.NoError(t, err)
	w.head = strings.TrimSpace(string(out))
	return w
}

func (w *readersWorld) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "GIT_CONFIG_NOSYSTEM=1", "LANG=C.UTF-8",
		"OPENAI_API_KEY=sk-CANARYKEY-0123456789abcdef", "TMPDIR=" + filepath.Join(w.dir, "tmp"),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a"}
}

func (w *readersWorld) git(t *testing.T, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = w.ws, w.env()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

func (w *readersWorld) expand(s string) string {
	return strings.NewReplacer("{{PORT}}", fmt.Sprint(w.port), "{{OUTSIDE}}", w.outside, "{{HOME}}", w.home, "{{WS}}", w.ws, "{{HEAD}}", w.head).Replace(s)
}

// setup writes the case's files and symlinks into the workspace.
func (w *readersWorld) setup(t *testing.T, c readersCase) {
	for p, content := range c.Files {
		full := filepath.Join(w.ws, filepath.FromSlash(w.expand(p)))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(w.expand(content)), 0o644))
	}
	for p, target := range c.Symlinks {
		full := filepath.Join(w.ws, filepath.FromSlash(w.expand(p)))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink(w.expand(target), full))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, "tmp"), 0o755))
}

// snapshot lists every file under the world with its size and mtime, so a
// run that wrote anything shows.
func (w *readersWorld) snapshot(t *testing.T) map[string]string {
	m := map[string]string{}
	filepath.Walk(w.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			m[p] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		}
		return nil
	})
	return m
}

// run runs the line as the bash tool would, unconfined, and reports what
// canary it touched ("" for none).
func (w *readersWorld) run(t *testing.T, line string) string {
	before := w.snapshot(t)
	hits := w.hits.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = w.ws, w.env()
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput()
	for _, canary := range []string{"CANARY-OUTSIDE", "CANARY-SSH", "sk-CANARYKEY"} {
		if strings.Contains(string(out), canary) {
			return "read " + canary
		}
	}
	time.Sleep(20 * time.Millisecond)
	if w.hits.Load() != hits {
		return "network"
	}
	after := w.snapshot(t)
	for p, s := range after {
		if rel, _ := filepath.Rel(w.dir, p); strings.HasPrefix(rel, filepath.Join("ws", ".git")+string(filepath.Separator)) && !strings.Contains(rel, "hooks") && !strings.HasSuffix(rel, "config") {
			continue // git's own bookkeeping (index refresh)
		}
		if before[p] != s {
			return "wrote " + p
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "tmp", "ran")); err == nil {
		return "ran a program"
	}
	return ""
}

func readersListener(t *testing.T) (int, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	hits := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, hits
}

func TestReadersAttackCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bash per allowed case")
	}
	cases := readReadersCases(t, "attacks.jsonl")
	port, hits := readersListener(t)
	allowed, escaped, edits := 0, 0, 0
	for _, c := range cases {
		w := newReadersWorld(t, port, hits)
		w.setup(t, c)
		g, err := NewGate(GateConfig{Root: w.ws, Mode: ModeEdit, BashDir: func() string { return w.ws }})
		require.NoError(t, err)
		line := w.expand(c.Cmd)
		args, _ := json.Marshal(map[string]string{"command": line})
		if g.Check("bash", false, args).Decision != Allow {
			continue
		}
		allowed++
		what := w.run(t, line)
		if w.redirectEdit(what, line) {
			// > FILE into the workspace is a file edit, which edit mode
			// allows as it allows the edit and write tools.
			edits++
			continue
		}
		if what != "" {
			escaped++
			t.Errorf("%s (%s) ran without asking and %s\n  cmd: %q\n  note: %s", c.ID, c.Family, what, line, c.Note)
		}
	}
	t.Logf("readers attack corpus: %d cases, %d ran without asking, %d touched a canary, %d wrote the workspace by a redirection (an edit)", len(cases), allowed, escaped, edits)
}

func TestReadersBenignCorpus(t *testing.T) {
	cases := readReadersCases(t, "benign.jsonl")
	var asked []string
	for _, c := range cases {
		w := newReadersWorld(t, 0, new(atomic.Int64))
		w.setup(t, c)
		g, err := NewGate(GateConfig{Root: w.ws, Mode: ModeEdit, BashDir: func() string { return w.ws }})
		require.NoError(t, err)
		args, _ := json.Marshal(map[string]string{"command": w.expand(c.Cmd)})
		if v := g.Check("bash", false, args); v.Decision != Allow {
			asked = append(asked, fmt.Sprintf("%s %q: %s (%s)", c.ID, c.Cmd, v.Decision, v.Reason))
		}
	}
	t.Logf("readers benign corpus: %d commands, %d asked (false asks):\n%s", len(cases), len(asked), strings.Join(asked, "\n"))
	// docs/tools.md gives the count: "cd src && … && cd .." asks, because
	// each path is taken from every directory the line may be in, and ..
	// from the workspace's top is outside.
	assert.LessOrEqual(t, len(asked), 1, "ordinary reading commands run without asking")
}

// redirectEdit reports whether what a line did is a write into the
// workspace, outside .git and .decode, by a redirection of its own.
func (w *readersWorld) redirectEdit(what, line string) bool {
	path, ok := strings.CutPrefix(what, "wrote ")
	if !ok {
		return false
	}
	rel, err := filepath.Rel(w.ws, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	first := strings.Split(filepath.ToSlash(rel), "/")[0]
	if first == ".git" || first == ".decode" {
		return false
	}
	return len(analyzeShell(line, nil).writes) > 0
}
