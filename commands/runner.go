package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/memory"
	"decode/session"
	"decode/tools"
)

// agentRun wires and runs the agent loop for ask and run.
func agentRun(c *cli.Context, o *AgentOptions) error {
	return runAgent(c.Context, o)
}

func runAgent(ctx context.Context, o *AgentOptions) error {
	return runAgentWith(ctx, o, nil)
}

// driver is how a command's turns run: whether it reads a PROMPT, and
// the core's driver for its turns. A nil *driver reads the prompt and
// runs one agent.Run.
type driver struct {
	// noPrompt: the command takes no PROMPT and stdin is not read.
	noPrompt bool
	// turns runs the command's turns; nil is one agent.Run.
	turns agent.Driver
	// render, when set, wraps the run's sink and progress for the
	// command's own output (a replay's line breaks, a plan's STEP lines).
	render func(sink func(agent.Event), p agent.Progress) (func(agent.Event), agent.Progress)
}

// prompt reads the command's prompt.
func (d *driver) prompt(s *IOStreams, o *AgentOptions) (string, error) {
	if d != nil && d.noPrompt {
		return "", nil
	}
	s, prompt, err := stdinFor(s, o)
	if err != nil {
		return "", err
	}
	return readPrompt(s, prompt, o.MaxStdin)
}

// runAgentWith is runAgent with the agent's turns run by d (decode plan,
// run --plan, replay, resume) in place of one agent.Run with the prompt.
func runAgentWith(ctx context.Context, o *AgentOptions, d *driver) (err error) {
	f := o.F
	r := newSink(f, o)
	defer func() { r.close(err) }()
	if err := o.checkFlags(); err != nil {
		return err
	}
	o.vlock = r
	dir, err := f.workDir(o.Dir)
	if err != nil {
		return err
	}
	if err := o.readFiles(dir, d); err != nil {
		return err
	}
	root := repoRoot(dir)
	cfg, warnings, err := f.loadConfig(root)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		r.warn(w)
	}
	o.verboseConfig(cfg)
	prompt, err := d.prompt(f.IO, o)
	if err != nil {
		return err
	}
	prompt = o.attached.prompt(prompt)
	schema, err := o.schema(root, dir)
	if err != nil {
		return err
	}
	if o.spec == nil {
		o.modelFrom = modelSource(o.Model, cfg)
		o.apply(o.newSpec(cfg, dir, schema), dir)
	}
	opts, err := f.agentSetup(ctx, o, cfg, dir, root)
	if err != nil {
		return err
	}
	defer o.sandbox.close()
	if err := o.attached.checkModel(opts.Model.Name()); err != nil {
		return err
	}
	opts.Attach = o.attached.forAgent()
	// MCP servers start once the sandbox is set up, which confines them.
	servers := f.mcpStart(ctx, o, cfg, dir)
	defer servers.close()
	if err := addMCPTools(&opts, o, cfg, servers, r.warn); err != nil {
		return err
	}
	if o.sandbox.warning != "" {
		r.warn(o.sandbox.warning)
	}
	opts.Sink = r.event
	schema.Apply(&opts)
	if o.approve != nil {
		opts.Approve = o.approve
	} else if f.IO.TTY != nil {
		opts.Approve = ttyApprover(f.IO, r, f.Prompting, runPromptHelp(&opts, promptColor(f.Getenv)))
	}

	log, sess, err := f.openLog(ctx, o, cfg)
	if err != nil {
		return err
	}
	if sess != nil {
		defer sess.Unlock()
	}
	opts.Log = log
	if sess != nil && (cfg.Snapshots == nil || *cfg.Snapshots) {
		sn := sess.Snapshotter(dir)
		defer sn.Close()
		opts.Snapshots = sn
	}
	spec := *o.spec
	spec.Model = opts.Model.Name()
	if o.Session == "" {
		opts.Start = &session.StartData{
			Model: opts.Model.Name(), Cwd: dir, Mode: gateMode(o, cfg), Command: o.Command, Version: f.Version,
			System: shortHash(opts.System), MCP: mcpRecord(servers), Sandbox: o.sandbox.summary, Spec: &spec,
		}
	} else if len(o.respec) > 0 {
		opts.Respec = &session.SpecData{Changes: o.respec, Spec: spec}
	}
	if err := f.wireHeadless(&opts, o, cfg, sess, dir, root, r.warn); err != nil {
		return err
	}
	if g, ok := opts.Gate.(*tools.Gate); ok && o.Verbose {
		opts.Gate = newVerboseGate(o, &opts, g.Mode())
	}
	r.begin(&opts, runInfo{Session: sessionID(sess), Model: opts.Model.Name(), Mode: gateMode(o, cfg), Cwd: dir, Command: o.Command, Version: f.Version})
	turns := o.turns(d, schema, r, dir, root)
	if d != nil && d.render != nil {
		opts.Sink, turns.Progress = d.render(opts.Sink, turns.Progress)
	}
	out, err := agent.RunTurns(ctx, opts, turns, prompt)
	if err == nil && o.lastMessage != "" {
		// Before finish, so that a failed write is what the run reports
		// (the answer is on stdout and in the session all the same).
		err = writeLastMessage(o.lastMessage, out.Text)
	}
	r.finish(out, err)
	if sess != nil && !o.Quiet {
		fmt.Fprintf(f.IO.Err, "session %s\n", sess.ID())
	}
	if sess != nil && errors.Is(err, agent.ErrPaused) {
		err = &pausedSession{ID: sess.ID(), err: err}
	}
	return err
}

// turns is what the command asks of the core: d's turns (one agent.Run
// when d is nil), checked against the schema, then --remember.
func (o *AgentOptions) turns(d *driver, schema *agent.ResponseSchema, r sink, dir, root string) agent.Turns {
	t := agent.Turns{Schema: schema, Progress: o.progress(r)}
	if d != nil {
		t.Driver = d.turns
	}
	if o.Remember {
		t.Remember = &agent.Remember{Path: filepath.Join(firstNonEmpty(root, dir), "MEMORY.md")}
	}
	return t
}

// progress prints what a command of several turns says on stderr
// (nothing under -q); warnings go to the sink, as the loop's do.
func (o *AgentOptions) progress(r sink) agent.Progress {
	return agent.Progress{
		Say: func(s string) {
			if !o.Quiet {
				fmt.Fprintln(o.F.IO.Err, "decode: "+s)
			}
		},
		Warn: r.warn,
	}
}

// pausedSession is a pause with the session it happened in, so that the
// error line names the exact commands that continue it, even under -q.
type pausedSession struct {
	ID  string
	err error
}

func (p *pausedSession) Error() string { return p.err.Error() }
func (p *pausedSession) Unwrap() error { return p.err }

// agentSetup resolves the model, tools, gate and system prompt.
func (f *Factory) agentSetup(ctx context.Context, o *AgentOptions, cfg Config, dir, root string) (agent.Options, error) {
	var opts agent.Options
	name := o.Model
	if name == "" {
		name = cfg.Model
	}
	if o.IdleTimeout != "" {
		cfg.IdleTimeout = o.IdleTimeout
	}
	m, err := f.newModel(ctx, name, cfg)
	if err != nil {
		return opts, err
	}
	if err := checkPrice(cfg, o.MaxCost, m); err != nil {
		return opts, err
	}
	o.verboseModel(name, cfg)
	f.learnSecrets(cfg)
	m = redactingModel{Model: m, r: f.redactor(), seesShapes: cfg.ModelSeesSecretShapes}
	wsRoot := root
	if wsRoot == "" {
		wsRoot = dir
	}
	ws, err := tools.NewWorkspace(wsRoot, absDirs(dir, o.AddDirs)...)
	if err != nil {
		return opts, &UsageError{Msg: "--add-dir: " + err.Error()}
	}
	mode, err := tools.ParseMode(gateMode(o, cfg))
	if err != nil {
		return opts, &UsageError{Msg: err.Error()}
	}
	if o.Command != "ask" && mode != tools.ModePlan {
		if o.sandbox, err = f.setUpSandbox(ctx, o, cfg, ws); err != nil {
			return opts, err
		}
	}
	var reg *tools.Registry // set below; the gate asks it where bash is
	gate, err := tools.NewGate(tools.GateConfig{
		Sandboxed: o.sandbox.bash != nil,
		Mode:      mode, Root: ws.Root(), ProtectedDirs: []string{".git", ".decode"},
		ExtraRoots: ws.Roots()[1:], BashDir: func() string { return bashDir(reg) },
		Allow: append(append([]string{}, cfg.Allow...), o.Allow...),
		Deny:  append(append([]string{}, cfg.Deny...), o.Deny...),
	})
	if err != nil {
		return opts, &UsageError{Msg: err.Error()}
	}
	o.verboseGateSetup(mode, append(append([]string{}, cfg.Allow...), o.Allow...), append(append([]string{}, cfg.Deny...), o.Deny...))
	pm := f.loadMemory(dir, root)
	pm.warn(f.IO.Err)
	o.verboseMemory(pm.files, pm.skills)
	reg = f.agentTools(o, cfg, ws, dir, mode, pm.skills)
	if sb := o.sandbox.bash; sb != nil {
		sb.Access = gate.BashAccess
	}
	if opts.System, err = f.systemPrompt(o, string(mode), dir, root, pm); err != nil {
		return opts, err
	}
	opts.Model = m
	opts.Cost = priceFunc(cfg, m.Name())
	opts.Tools = reg
	opts.Gate = gate
	opts.MaxTurns = o.MaxTurns
	if opts.MaxTurns == 0 {
		opts.MaxTurns = cfg.MaxTurns
	}
	opts.Compaction = compactOptions(cfg, name, m.Name(), gateMode(o, cfg), o)
	return opts, nil
}

// agentTools builds the tools a command offers: the read-only ones for ask
// and plan mode, all of them otherwise, and the skill tool when there are
// skills (so it costs nothing when there are none). decode memory --prompt
// measures the same registry.
func (f *Factory) agentTools(o *AgentOptions, cfg Config, ws *tools.Workspace, dir string, mode tools.Mode, skills []memory.Skill) *tools.Registry {
	ts := tools.FileToolsWith(ws, o.buffers)
	readOnly := o.Command == "ask" || mode == tools.Mode("plan")
	if !readOnly {
		ts = append(ts, tools.NewBash(tools.BashOptions{
			Dir: dir, Env: tools.ScrubEnv(f.Environ(), f.secretNames(cfg)), Timeout: 2 * time.Minute,
			TempDir: bashTempDir(), Secrets: f.redactor(), Sandbox: o.sandbox.bash,
			NoEscalation: mode == tools.ModeBypass,
		}))
	}
	if t := skillTool(skills); t != nil {
		ts = append(ts, t)
	}
	ts = append(ts, f.waitTools(o)...)
	ts = append(ts, tools.NewWebFetch(tools.WebFetchOptions{UserAgent: "decode/" + f.Version, Secrets: f.redactor()}))
	if o.Command != "ask" {
		ts = append(ts, tools.NewTodo()) // one question needs no task list
	}
	reg := tools.NewRegistry(ts...)
	if readOnly {
		reg = reg.ReadOnly()
	}
	return reg
}

// bashTempDir is where this run's bash tool saves full outputs too long
// to show: a directory of its own under $TMPDIR, made only when an output
// overflows and left in place, as the session records the paths it returned
// (the system's temp cleaning removes it).
func bashTempDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("decode-%s-%d", time.Now().Format("20060102-150405"), os.Getpid()))
}

// bashDir returns the working directory the bash tool of reg keeps, or ""
// before it exists or when there is none.
func bashDir(reg *tools.Registry) string {
	if reg == nil {
		return ""
	}
	if t, ok := reg.Get("bash"); ok {
		if b, ok := t.(*tools.Bash); ok {
			return b.Dir()
		}
	}
	return ""
}

// absDirs makes the --add-dir directories absolute, relative to dir (the
// working directory, after -C) like every other path decode takes.
func absDirs(dir string, dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		out[i] = d
	}
	return out
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
	s := o.Opened
	if s == nil || (o.Session != "" && s.ID() != o.Session) {
		st, err := f.storeAt(dir)
		if err != nil {
			return nil, nil, err
		}
		if o.Session != "" {
			s, err = st.Open(ctx, o.Session)
		} else {
			s, err = st.Create(ctx)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	f.learnSecrets(cfg)
	s.Store().SetRedactor(f.redactor(), cfg.ModelSeesSecretShapes)
	if err := s.Lock(); err != nil {
		if !errors.Is(err, session.ErrConflict) {
			return nil, nil, err // a full disk, a read-only store, a permission: the error names it
		}
		return nil, nil, fmt.Errorf("session %s is being written by another decode process (%w); send it a message with decode steer %s, or branch it with decode fork %s", s.ID(), err, s.ID(), s.ID())
	}
	if w := s.Reclaimed(); w != "" {
		fmt.Fprintln(f.IO.Err, "decode: warning: "+w)
	}
	return s, s, nil
}

// stdinFor decides whether a command reads stdin, and returns the streams
// to read the prompt from with the PROMPT argument: --no-stdin never reads
// it; "-" as the whole PROMPT reads the prompt from stdin (a terminal too,
// until end of input); otherwise stdin is read when it is a pipe or a
// file, as the prompt (no PROMPT) or attached to PROMPT.
func stdinFor(s *IOStreams, o *AgentOptions) (*IOStreams, string, error) {
	prompt := o.Prompt
	dash := strings.TrimSpace(prompt) == "-"
	switch {
	case dash && o.NoStdin:
		return nil, "", usageErrorf(`"-" reads the prompt from stdin, which --no-stdin turns off; use one of them`)
	case dash:
		in := *s
		in.InPiped = true
		return &in, "", nil
	case o.NoStdin:
		in := *s
		in.InPiped = false
		return &in, prompt, nil
	}
	return s, prompt, nil
}

// stdinWaitHint is how long decode waits for the first byte of a piped
// stdin, with a PROMPT, before saying on stderr what it is waiting for.
var stdinWaitHint = 3 * time.Second

// readPrompt joins the PROMPT argument with piped stdin, refusing input
// past the limit rather than cutting it.
func readPrompt(io_ *IOStreams, prompt string, limit int64) (string, error) {
	if io_.InPiped {
		if limit <= 0 {
			limit = defaultMaxStdin
		}
		src := io_.In
		if prompt != "" && io_.Err != nil {
			w := &waitNotice{r: src, started: make(chan struct{})}
			stop := time.AfterFunc(stdinWaitHint, func() {
				select {
				case <-w.started:
				default:
					fmt.Fprintln(io_.Err, "decode: waiting for stdin, which is attached to the prompt; "+
						"pass --no-stdin or </dev/null not to read it")
				}
			})
			defer stop.Stop()
			src = w
		}
		data, err := io.ReadAll(io.LimitReader(src, limit+1))
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

// waitNotice passes reads on and closes started at the first byte.
type waitNotice struct {
	r       io.Reader
	started chan struct{}
	once    sync.Once
}

func (w *waitNotice) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 || err != nil {
		w.once.Do(func() { close(w.started) })
	}
	return n, err
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
