package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/memory"
	"decode/prompts"
	"decode/session"
	"decode/tools"
)

// agentRun wires and runs the agent loop for ask and run.
func agentRun(c *cli.Context, o *AgentOptions) error {
	return runAgent(c.Context, o)
}

func runAgent(ctx context.Context, o *AgentOptions) error {
	f := o.F
	dir, err := f.workDir(o.Dir)
	if err != nil {
		return err
	}
	root := repoRoot(dir)
	cfg, warnings, err := f.loadConfig(root)
	if err != nil {
		return err
	}
	r := newRenderer(f.IO, o.Quiet)
	for _, w := range warnings {
		r.warn(w)
	}
	prompt, err := readPrompt(f.IO, o.Prompt, o.MaxStdin)
	if err != nil {
		return err
	}
	opts, err := f.agentSetup(ctx, o, cfg, dir, root)
	if err != nil {
		return err
	}
	opts.Sink = r.event
	if f.IO.TTY != nil {
		opts.Approve = ttyApprover(f.IO, r)
	}

	log, sess, err := f.openLog(ctx, o, cfg)
	if err != nil {
		return err
	}
	if sess != nil {
		defer sess.Unlock()
	}
	opts.Log = log
	if o.Session == "" {
		opts.Start = &session.StartData{
			Model: opts.Model.Name(), Cwd: dir, Mode: gateMode(o, cfg), Command: o.Command, Version: f.Version,
			System: shortHash(opts.System),
		}
	}
	opts.ExitCode = ExitCode
	out, err := agent.Run(ctx, opts, prompt)
	r.finish(out, err)
	if sess != nil && !o.Quiet {
		fmt.Fprintf(f.IO.Err, "session %s\n", sess.ID())
	}
	return err
}

// agentSetup resolves the model, tools, gate and system prompt.
func (f *Factory) agentSetup(ctx context.Context, o *AgentOptions, cfg Config, dir, root string) (agent.Options, error) {
	var opts agent.Options
	name := o.Model
	if name == "" {
		name = cfg.Model
	}
	m, err := f.newModel(ctx, name, cfg)
	if err != nil {
		return opts, err
	}
	wsRoot := root
	if wsRoot == "" {
		wsRoot = dir
	}
	ws, err := tools.NewWorkspace(wsRoot)
	if err != nil {
		return opts, err
	}
	mode, err := tools.ParseMode(gateMode(o, cfg))
	if err != nil {
		return opts, &UsageError{Msg: err.Error()}
	}
	gate, err := tools.NewGate(tools.GateConfig{
		Mode: mode, Root: ws.Root(), ProtectedDirs: []string{".git", ".decode"},
		Allow: append(append([]string{}, cfg.Allow...), o.Allow...),
		Deny:  append(append([]string{}, cfg.Deny...), o.Deny...),
	})
	if err != nil {
		return opts, &UsageError{Msg: err.Error()}
	}
	reg := tools.NewRegistry(tools.FileTools(ws)...)
	if o.Command == "ask" || mode == tools.Mode("plan") {
		reg = reg.ReadOnly()
	} else {
		reg = tools.NewRegistry(append(tools.FileTools(ws), tools.NewBash(tools.BashOptions{
			Dir: dir, Env: tools.ScrubEnv(f.Environ(), f.secretNames(cfg)), Timeout: 2 * time.Minute,
		}))...)
	}
	files, warns := memory.Load(memory.Options{Cwd: dir, Home: f.home(), UserConfigDir: f.configDir()})
	for _, w := range warns {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	opts.Model = m
	opts.Tools = reg
	opts.Gate = gate
	opts.MaxTurns = o.MaxTurns
	if opts.MaxTurns == 0 {
		opts.MaxTurns = cfg.MaxTurns
	}
	opts.System = prompts.System(prompts.Options{
		Command: o.Command, Mode: string(mode), Cwd: dir, OS: runtime.GOOS,
		Date: time.Now().Format("2006-01-02"), GitRepo: root != "", Memory: memory.Render(files),
	})
	return opts, nil
}

func gateMode(o *AgentOptions, cfg Config) string {
	switch {
	case o.Mode != "":
		return o.Mode
	case cfg.Mode != "":
		return cfg.Mode
	}
	return "default"
}

// openLog opens the session store and a new session (or, for resume, the
// named one), locked for writing; or a memory log for --no-session.
func (f *Factory) openLog(ctx context.Context, o *AgentOptions, cfg Config) (agent.Log, *session.Session, error) {
	if o.NoSession {
		return &agent.MemoryLog{}, nil, nil
	}
	dir, err := f.workDir(o.Dir)
	if err != nil {
		return nil, nil, err
	}
	st, err := session.OpenStore(dir, session.Env{Getenv: f.Getenv, Home: f.home()})
	if err != nil {
		return nil, nil, fmt.Errorf("open session store: %w", err)
	}
	st.SetRedactor(redactValues(f.Getenv, f.secretNames(cfg)))
	var s *session.Session
	if o.Session != "" {
		s, err = st.Open(ctx, o.Session)
	} else {
		s, err = st.Create(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := s.Lock(); err != nil {
		return nil, nil, fmt.Errorf("session %s is being written by another decode process (%w); send it a message with decode steer %s, or branch it with decode fork %s", s.ID(), err, s.ID(), s.ID())
	}
	if w := s.Reclaimed(); w != "" {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	return s, s, nil
}

// redactValues replaces the values of the named variables, where set and
// long enough to be secrets, with a marker.
func redactValues(getenv func(string) string, names []string) func([]byte) []byte {
	var vals []string
	for _, n := range names {
		if v := getenv(n); len(v) >= 8 {
			vals = append(vals, v)
		}
	}
	return func(b []byte) []byte {
		for _, v := range vals {
			b = []byte(strings.ReplaceAll(string(b), v, "[REDACTED]"))
		}
		return b
	}
}

// readPrompt joins the PROMPT argument with piped stdin, refusing input
// past the limit rather than cutting it.
func readPrompt(io_ *IOStreams, prompt string, limit int64) (string, error) {
	if io_.InPiped {
		if limit <= 0 {
			limit = defaultMaxStdin
		}
		data, err := io.ReadAll(io.LimitReader(io_.In, limit+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if int64(len(data)) > limit {
			return "", usageErrorf("stdin is larger than %d bytes; nothing was sent. Raise the limit with --max-stdin BYTES (or max_stdin in config)", limit)
		}
		in := strings.TrimRight(string(data), "\n")
		switch {
		case strings.TrimSpace(in) == "":
		case prompt == "":
			prompt = in
		default:
			prompt += "\n\n<stdin>\n" + in + "\n</stdin>"
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return "", usageErrorf("no prompt: give it as an argument or pipe it on stdin")
	}
	return prompt, nil
}

// repoRoot returns the top level of the git work tree containing dir, or "".
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}
