package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"decode/agent/llm"
	"decode/secrets"
	"decode/session"
)

// Hook events, in the order a run meets them.
const (
	HookRunStart      = "run_start"
	HookBeforeRequest = "before_request"
	HookBeforeTool    = "before_tool"
	HookAfterTool     = "after_tool"
	HookBeforeFinish  = "before_finish"
	HookRunEnd        = "run_end"
)

// HookEvents lists the events hooks can be configured for.
var HookEvents = []string{HookRunStart, HookBeforeRequest, HookBeforeTool, HookAfterTool, HookBeforeFinish, HookRunEnd}

// hookBlock is the exit code with which a before_tool hook blocks a call
// and a before_finish hook sends the model back to work.
const hookBlock = 2

// defaultHookTimeout bounds a hook that sets no timeout of its own.
const defaultHookTimeout = time.Minute

// maxHookOutput caps what is kept of a hook's stdout and stderr.
const maxHookOutput = 64 << 10

// Hooks runs the executables configured for the loop's events (DESIGN §9).
// Each command line runs with /bin/sh -c in Dir, gets the event as JSON on
// stdin, and is killed with its process group after Timeout.
type Hooks struct {
	// Commands maps an event name to its command lines, run in order.
	Commands map[string][]string
	Dir      string
	// Env is the hooks' whole environment (the caller removes secrets).
	Env     []string
	Timeout time.Duration
	// Session is the id put in every event.
	Session string
	// Secrets redacts each event before a hook reads it (shapes only when
	// nil): hook input is an exit like any other.
	Secrets *secrets.Redactor
}

// HookEvent is what a hook reads on stdin.
type HookEvent struct {
	Event   string `json:"event"`
	Session string `json:"session,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	// Prompt is the run's new prompt (run_start).
	Prompt string `json:"prompt,omitempty"`
	// Turn counts the session's model requests so far (before_request).
	Turn int `json:"turn,omitempty"`
	// Tool, CallID and Args name the call (before_tool, after_tool).
	Tool   string          `json:"tool,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	// Result and IsError are the call's outcome (after_tool).
	Result  string `json:"result,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Text is the model's final answer (before_finish).
	Text string `json:"text,omitempty"`
	// Status and Exit say how the run ended (run_end).
	Status string `json:"status,omitempty"`
	Exit   int    `json:"exit,omitempty"`
}

// hookRun is the outcome of one hook command.
type hookRun struct {
	command        string
	code           int
	stdout, stderr string
	err            error // could not start, or timed out
}

// failure describes a run that neither succeeded nor used the exit code
// the event gives a meaning to, or "" when there is none.
func (r hookRun) failure(meaningful bool) string {
	switch {
	case r.err != nil:
		return fmt.Sprintf("hook %q failed: %v", r.command, r.err)
	case r.code == 0 || (meaningful && r.code == hookBlock):
		return ""
	}
	msg := fmt.Sprintf("hook %q failed: exit status %d", r.command, r.code)
	if s := firstLine(strings.TrimSpace(r.stderr)); s != "" {
		msg += ": " + s
	}
	return msg
}

// each runs the event's commands in order until visit returns false.
func (h *Hooks) each(ctx context.Context, ev HookEvent, visit func(hookRun) bool) {
	if h == nil || len(h.Commands[ev.Event]) == 0 {
		return
	}
	ev.Session = h.Session
	if ev.Cwd == "" {
		ev.Cwd = h.Dir
	}
	for _, c := range h.Commands[ev.Event] {
		in, _ := json.Marshal(ev)
		in = h.Secrets.RedactLine(in)
		if !visit(h.run(ctx, c, ev.Event, in)) {
			return
		}
	}
}

// run runs one hook command line with the event on stdin.
func (h *Hooks) run(ctx context.Context, command, event string, in []byte) hookRun {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = defaultHookTimeout
	}
	// A hook runs even when the run is being cancelled (run_end reports
	// it), but never longer than its timeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = h.Dir
	cmd.Env = append(append([]string{}, h.Env...), "DECODE_HOOK_EVENT="+event, "DECODE_SESSION="+h.Session)
	cmd.Stdin = bytes.NewReader(in)
	stdout, stderr := &cappedBuffer{}, &cappedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := hookRun{command: command, stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("timed out after %s and was killed", timeout)
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		r.err = err
	}
	return r
}

// cappedBuffer keeps the first maxHookOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxHookOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// notify runs an event's hooks for what they observe; failures are
// reported as warnings and recorded, never swallowed.
func (l *loop) notify(ctx context.Context, ev HookEvent) {
	l.o.Hooks.each(ctx, ev, func(r hookRun) bool {
		if msg := r.failure(false); msg != "" {
			l.hookFailed(ev.Event, msg)
		}
		return true
	})
}

// beforeTool runs the before_tool hooks: exit 2 blocks the call with the
// hook's stderr as the reason the model sees; a JSON object on stdout
// replaces the arguments. A hook that fails blocks the call too, so a
// broken policy check never lets calls through.
func (l *loop) beforeTool(ctx context.Context, call llm.ToolCall) (json.RawMessage, string) {
	args, block := call.Args, ""
	l.o.Hooks.each(ctx, HookEvent{Event: HookBeforeTool, Tool: call.Name, CallID: call.ID, Args: safeArgs(args)}, func(r hookRun) bool {
		if msg := r.failure(true); msg != "" {
			l.hookFailed(HookBeforeTool, msg)
			block = msg + "; the call was not run"
			return false
		}
		if r.code == hookBlock {
			block = "blocked by a before_tool hook"
			if s := strings.TrimSpace(r.stderr); s != "" {
				block += ": " + s
			}
			return false
		}
		if out := bytes.TrimSpace([]byte(r.stdout)); len(out) > 0 {
			if out[0] != '{' || !json.Valid(out) {
				msg := fmt.Sprintf("hook %q printed something other than a JSON object of arguments", r.command)
				l.hookFailed(HookBeforeTool, msg)
				block = msg + "; the call was not run"
				return false
			}
			args = json.RawMessage(out)
		}
		return true
	})
	return args, block
}

// beforeFinish runs the before_finish hooks when the model would end the
// turn; a hook that prints a message on stdout (exit 0) or exits 2 with
// one on stderr sends the model back to work with it.
func (l *loop) beforeFinish(ctx context.Context, text string) []string {
	var msgs []string
	l.o.Hooks.each(ctx, HookEvent{Event: HookBeforeFinish, Text: text}, func(r hookRun) bool {
		if msg := r.failure(true); msg != "" {
			l.hookFailed(HookBeforeFinish, msg)
			return true
		}
		out := r.stdout
		if r.code == hookBlock {
			out = r.stderr
		}
		if s := strings.TrimSpace(out); s != "" {
			msgs = append(msgs, s)
		}
		return true
	})
	return msgs
}

// hookFailed reports a hook failure on stderr and in the session.
func (l *loop) hookFailed(event, msg string) {
	l.o.Sink(Event{Type: EventWarning, Text: event + " " + msg})
	if l.ended {
		return // run_end: the session is closed
	}
	l.add(session.NewEntry(session.TypeError, session.ErrorData{Kind: "hook", Message: event + " " + msg}, "hook "+event))
}
