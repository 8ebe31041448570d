package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"decode/agent/llm"
	"decode/secrets"
	"decode/tools/sandbox"
)

//go:embed bash.md
var bashDesc string

// Defaults and limits of the bash tool.
const (
	bashDefaultTimeout = 2 * time.Minute
	bashMaxTimeout     = 10 * time.Minute
	bashMaxLines       = 2000
	bashMaxBytes       = 50 << 10
	// bashMaxSaved caps the file holding the full output, so a runaway
	// command cannot fill the disk.
	bashMaxSaved = 64 << 20
	// bashKillGrace is how long a command has to exit after SIGTERM before
	// its process group gets SIGKILL.
	bashKillGrace = 2 * time.Second
	// bashPipeGrace is how long output is still read after the shell exits,
	// for background processes that keep it open.
	bashPipeGrace = 250 * time.Millisecond
)

// BashOptions configures the bash tool.
type BashOptions struct {
	// Dir is the starting working directory.
	Dir string
	// Env is the commands' whole environment; the caller scrubs it (ScrubEnv).
	Env []string
	// Timeout is the default timeout of a call (2 minutes when zero).
	Timeout time.Duration
	// MaxLines and MaxBytes cap the output shown (2,000 lines, 50 KB when zero).
	MaxLines, MaxBytes int
	// Secrets redacts the files with full outputs (shapes only when nil).
	Secrets *secrets.Redactor
	// TempDir holds the files with full outputs (the system's when empty).
	// It is created, private, when the first output overflows, so a run
	// can be given a directory of its own that exists only if it is used.
	TempDir string
	// Sandbox, when set, runs every command in the operating system's
	// sandbox; nil runs commands as plain child processes.
	Sandbox *BashSandbox
	// NoEscalation leaves the sandbox's way out (the sandbox and reason
	// arguments) out of the schema: in bypass mode every command already
	// runs unconfined, so an escalation could only stop for a person.
	NoEscalation bool
}

// Bash runs command lines in a shell. The working directory a command ends
// in is where the next one starts.
type Bash struct {
	o         BashOptions
	shell     string
	schema    json.RawMessage
	killGrace time.Duration

	mu  sync.Mutex
	cwd string
}

// NewBash returns the bash tool.
func NewBash(o BashOptions) *Bash {
	if o.Timeout <= 0 {
		o.Timeout = bashDefaultTimeout
	}
	if o.MaxLines <= 0 {
		o.MaxLines = bashMaxLines
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = bashMaxBytes
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	shell := "/bin/bash"
	if _, err := os.Stat(shell); err != nil {
		shell = "/bin/sh"
	}
	escalate := ""
	if o.Sandbox != nil && !o.NoEscalation {
		escalate = `,"sandbox":{"type":"string","enum":["escalate"],"description":"only after the sandbox blocked it (network, writes outside the workspace): rerun it outside if a person approves your reason"},` +
			`"reason":{"type":"string"}`
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{"command":{"type":"string"},`+
		`"timeout_ms":{"type":"integer","description":"default %d"}%s},"required":["command"]}`, o.Timeout.Milliseconds(), escalate)
	return &Bash{o: o, shell: shell, schema: json.RawMessage(schema), killGrace: bashKillGrace, cwd: o.Dir}
}

// Spec describes the tool to the model.
func (b *Bash) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "bash", Description: strings.TrimSpace(bashDesc), Schema: b.schema}
}

// ReadOnly reports false: a command can change anything.
func (b *Bash) ReadOnly() bool { return false }

type bashArgs struct {
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms"`
	// Sandbox "escalate" asks to run outside the sandbox; the gate always
	// asks a person first.
	Sandbox string `json:"sandbox"`
	Reason  string `json:"reason"`
}

// Run runs one command line.
func (b *Bash) Run(ctx context.Context, raw json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = Result{Content: fmt.Sprintf("bash failed: %v", p), IsError: true}, nil
		}
	}()
	var a bashArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return Result{Content: "invalid arguments: " + err.Error(), IsError: true}, nil
	}
	switch {
	case strings.TrimSpace(a.Command) == "":
		return Result{Content: "command is empty", IsError: true}, nil
	case strings.IndexByte(a.Command, 0) >= 0:
		return Result{Content: "command contains a NUL byte", IsError: true}, nil
	case a.Sandbox != "" && a.Sandbox != "escalate":
		return Result{Content: `sandbox must be "escalate" or left out`, IsError: true}, nil
	case a.TimeoutMS < 0:
		return Result{Content: "timeout_ms must be positive", IsError: true}, nil
	case ctx.Err() != nil:
		return Result{Content: "command was interrupted before it started", IsError: true}, nil
	}
	timeout := b.o.Timeout
	if a.TimeoutMS > 0 {
		limit := max(b.o.Timeout, bashMaxTimeout)
		timeout = time.Duration(min(a.TimeoutMS, limit.Milliseconds())) * time.Millisecond
	}
	dir, note := b.startDir()
	acc := b.access(raw, a)
	run, err := b.run(ctx, a.Command, dir, timeout, acc)
	if err != nil {
		return Result{}, err
	}
	if run.cwd != "" {
		b.mu.Lock()
		b.cwd = run.cwd
		b.mu.Unlock()
	}
	res = run.result(timeout)
	if note != "" {
		res.Content = note + "\n" + res.Content
	}
	res.Note = fmt.Sprintf("bash %s (%s)", firstLine(a.Command, 60), run.summary())
	if b.o.Sandbox != nil && acc != AccessWrite {
		res.Note += " [" + acc.String() + "]"
	}
	return res, nil
}

// access is how far the call may reach in the sandbox.
func (b *Bash) access(raw json.RawMessage, a bashArgs) Access {
	switch {
	case b.o.Sandbox == nil:
		return AccessFull
	case a.Sandbox == "escalate":
		return AccessFull // the gate had a person approve it
	case b.o.Sandbox.Access != nil:
		return b.o.Sandbox.Access(raw)
	}
	return AccessWrite
}

// Dir returns the directory the next command starts in: where the last one
// ended. The gate places a command's relative paths from there.
func (b *Bash) Dir() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cwd
}

// startDir returns where the next command starts: where the last one
// ended, or the configured directory when that one is gone.
func (b *Bash) startDir() (string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cwd == b.o.Dir {
		return b.cwd, ""
	}
	if fi, err := os.Stat(b.cwd); err == nil && fi.IsDir() {
		return b.cwd, ""
	}
	note := fmt.Sprintf("[the previous working directory %s no longer exists; running in %s]", b.cwd, b.o.Dir)
	b.cwd = b.o.Dir
	return b.cwd, note
}

// bashRun is the outcome of one command.
type bashRun struct {
	out      *bashOutput
	state    *os.ProcessState
	stopped  string // "timeout" or "cancel" when the timeout or the caller stopped it
	cwd      string // where the shell ended, if it said
	detached bool   // background processes held the output open after the shell exited
}

// run starts the command in its own process group and waits for it, its
// timeout, or ctx; stopping it kills the whole group.
func (b *Bash) run(ctx context.Context, command, dir string, timeout time.Duration, acc Access) (*bashRun, error) {
	cwdFile, err := os.CreateTemp("", "decode-cwd-*") // removed below, so not in TempDir
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	defer os.Remove(cwdFile.Name())
	defer cwdFile.Close()

	out := &bashOutput{maxLines: b.o.MaxLines, maxBytes: b.o.MaxBytes, dir: b.o.TempDir, secrets: b.o.Secrets}
	// The EXIT trap reports the final working directory on fd 3. It is a
	// statement of its own before the command, so it does not change how the
	// command parses; a command that resets the trap just keeps its directory.
	args := []string{b.shell, "-c", "trap 'pwd -P >&3' EXIT; " + command}
	var cmd *exec.Cmd
	if b.o.Sandbox != nil {
		if cmd, err = sandbox.Command(context.WithoutCancel(ctx), b.o.Sandbox.spec(args, dir, b.o.Env, acc)); err != nil {
			return nil, fmt.Errorf("bash: %w", err)
		}
	} else {
		cmd = exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append([]string{}, b.o.Env...) // never nil: nil would mean our own environment
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{cwdFile}
	cmd.WaitDelay = bashPipeGrace
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bash: start %s: %w", b.shell, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	r := &bashRun{out: out}
	select {
	case err = <-done:
	case <-timer.C:
		r.stopped = "timeout"
	case <-ctx.Done():
		r.stopped = "cancel"
	}
	if r.stopped != "" {
		err = b.stop(cmd.Process.Pid, done)
	}
	out.finish()
	r.state = cmd.ProcessState
	r.detached = errors.Is(err, exec.ErrWaitDelay)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !r.detached {
		return nil, fmt.Errorf("bash: %w", err)
	}
	if data, err := os.ReadFile(cwdFile.Name()); err == nil {
		if d := strings.TrimSpace(string(data)); filepath.IsAbs(d) {
			r.cwd = d
		}
	}
	return r, nil
}

// stop terminates the process group: SIGTERM, then SIGKILL after the grace
// period for whatever is left, including children that outlived the shell.
func (b *Bash) stop(pid int, done <-chan error) error {
	killGroup(pid, false)
	grace := time.NewTimer(b.killGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		killGroup(pid, true)
		return err
	case <-grace.C:
	}
	killGroup(pid, true)
	return <-done
}

// result turns the outcome into what the model sees.
func (r *bashRun) result(timeout time.Duration) Result {
	text, truncated := r.out.text()
	var b strings.Builder
	switch r.stopped {
	case "timeout":
		fmt.Fprintf(&b, "command timed out after %s and was killed with everything it started; output until then:\n", timeout)
	case "cancel":
		b.WriteString("command was interrupted and killed with everything it started; output until then:\n")
	}
	if truncated != "" {
		b.WriteString(truncated + "\n")
	}
	switch {
	case text != "":
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	case r.stopped == "":
		b.WriteString("(no output)\n")
	}
	if r.detached {
		b.WriteString("[background processes kept the output open; their later output is lost: redirect it to a file]\n")
	}
	if r.stopped == "" {
		if status := r.status(); status != "" {
			b.WriteString(status + "\n")
		}
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n"), IsError: r.stopped != ""}
}

// status describes a non-zero exit: "exit status 2" or "killed by signal: killed".
func (r *bashRun) status() string {
	if r.state == nil || r.state.Success() {
		return ""
	}
	if code := r.state.ExitCode(); code >= 0 {
		return fmt.Sprintf("exit status %d", code)
	}
	return r.state.String() // "signal: killed"
}

// summary is the short outcome for the one-line note.
func (r *bashRun) summary() string {
	parts := []string{}
	switch {
	case r.stopped == "timeout":
		parts = append(parts, "timed out")
	case r.stopped == "cancel":
		parts = append(parts, "interrupted")
	case r.status() != "":
		parts = append(parts, r.status())
	default:
		parts = append(parts, "ok")
	}
	return strings.Join(append(parts, fmt.Sprintf("%d lines", r.out.lineCount())), ", ")
}

// firstLine returns the first line of s, at most n runes, for the note.
func firstLine(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if cut {
		return s + " …"
	}
	return s
}

// bashOutput collects a command's combined output: all of it while it is
// small, then the tail in memory and the whole in a temporary file.
type bashOutput struct {
	mu                 sync.Mutex
	maxLines, maxBytes int
	dir                string

	buf     []byte // everything, or the tail once spilled
	total   int64
	lines   int // newlines seen
	spilled bool
	secrets *secrets.Redactor
	file    *os.File
	// redacted writes to file: the spill file is an exit like any other.
	redacted *secrets.Writer
	saved    int64
	fileErr  error
}

func (o *bashOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	o.lines += bytes.Count(p, []byte{'\n'})
	o.buf = append(o.buf, p...)
	switch {
	case o.spilled:
		o.save(p)
	case len(o.buf) > o.maxBytes || o.lines > o.maxLines:
		o.spill()
	}
	if o.spilled && len(o.buf) > 2*o.maxBytes {
		n := copy(o.buf, o.buf[len(o.buf)-o.maxBytes:])
		o.buf = o.buf[:n]
	}
	return len(p), nil
}

// spill moves the output so far to a temporary file.
func (o *bashOutput) spill() {
	o.spilled = true
	if o.fileErr = os.MkdirAll(o.dir, 0o700); o.fileErr == nil {
		o.file, o.fileErr = os.CreateTemp(o.dir, "decode-bash-*.txt")
	}
	if o.file != nil {
		o.redacted = o.secrets.Writer(o.file)
	}
	o.save(o.buf)
}

func (o *bashOutput) save(p []byte) {
	if o.file == nil || o.fileErr != nil {
		return
	}
	if room := bashMaxSaved - o.saved; int64(len(p)) > room {
		p = p[:max(room, 0)]
	}
	n, err := o.redacted.Write(p)
	o.saved += int64(n)
	if err != nil {
		o.fileErr = err
	}
}

// finish spills an output that ended just over the line limit and closes
// the file.
func (o *bashOutput) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.spilled && o.lineCountLocked() > o.maxLines {
		o.spill()
	}
	if o.file != nil {
		if err := o.redacted.Flush(); err != nil && o.fileErr == nil {
			o.fileErr = err
		}
		if err := o.file.Close(); err != nil && o.fileErr == nil {
			o.fileErr = err
		}
	}
}

func (o *bashOutput) lineCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lineCountLocked()
}

func (o *bashOutput) lineCountLocked() int {
	if len(o.buf) > 0 && o.buf[len(o.buf)-1] != '\n' {
		return o.lines + 1
	}
	return o.lines
}

// text returns the output to show, the tail when it is over the limits,
// and a note saying what was cut and where the whole is.
func (o *bashOutput) text() (string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.spilled {
		return strings.ToValidUTF8(string(o.buf), "\uFFFD"), ""
	}
	tail := o.buf
	if len(tail) > o.maxBytes {
		tail = tail[len(tail)-o.maxBytes:]
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:] // drop the partial first line
		}
	}
	tail = lastLines(tail, o.maxLines)
	shown := bytes.Count(tail, []byte{'\n'})
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		shown++
	}
	note := fmt.Sprintf("[output cut: showing the last %d of %d lines (%d of %d bytes)", shown, o.lineCountLocked(), len(tail), o.total)
	switch {
	case o.fileErr != nil:
		note += fmt.Sprintf("; the full output could not be saved: %v]", o.fileErr)
	case o.saved < o.total:
		note += fmt.Sprintf("; the first %d bytes are saved in %s]", o.saved, o.file.Name())
	default:
		note += fmt.Sprintf("; the full output is in %s]", o.file.Name())
	}
	return strings.ToValidUTF8(string(tail), "\uFFFD"), note
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i, seen := end-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			seen++
			if seen == n {
				return b[i+1:]
			}
		}
	}
	return b
}
