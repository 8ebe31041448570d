package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/session"
	"decode/tools"
)

// The ACP server lives in commands, beside run and resume, because it is
// one more outer assembler of the same run: each session/prompt goes
// through runAgentWith with the options `decode run` (first prompt) or
// `decode resume` (later prompts, session/load) would build, so the gate,
// sandbox, limits, hooks, compaction and session entries are the same.
// Only where the run reports (a sink that sends session/update) and who
// answers the gate's asks (session/request_permission) differ.

// acpProtocolVersion is the ACP major version decode speaks.
const acpProtocolVersion = 1

// NewCmdACP builds `decode acp`.
func NewCmdACP(f *Factory, runF func(context.Context, *ACPOptions) error) *cli.Command {
	if runF == nil {
		runF = acpRun
	}
	return &cli.Command{
		Name:  "acp",
		Usage: "serve the Agent Client Protocol on stdin/stdout, for editors (Zed, Neovim, JetBrains)",
		Description: `Runs decode as an Agent Client Protocol (ACP v1) agent: JSON-RPC 2.0, one
message a line, on stdin and stdout; stderr carries warnings. An editor starts
it and drives sessions: each prompt is a run with the same gate, sandbox,
limits, hooks and session entries as decode run, and its session is in
refs/decode/sessions/* like any other (decode log, decode resume work on it).
The gate's asks become the editor's permission requests. When the editor
offers fs/read_text_file and fs/write_text_file, the file tools read and
write through its buffers, so the model sees unsaved changes.

   Zed settings.json:  "agent_servers": { "decode": { "command": "decode", "args": ["acp"] } }
   decode acp -m script:testdata/scripts/demo.json    # a scripted model, offline

The flags set every session's defaults, as for decode run.`,
		Flags:        agentFlags(true),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "run", c)
			if o.JSON || o.NoSession || o.SchemaFile != "" || o.Prompt != "" {
				return usageErrorf("decode acp takes no PROMPT, --json, --schema or --no-session: the editor sends prompts, and sessions are recorded so that they can be loaded")
			}
			return runF(c.Context, &ACPOptions{Agent: o})
		},
	}
}

// ACPOptions are decode acp's flags: the defaults of every session.
type ACPOptions struct {
	Agent *AgentOptions
}

func acpRun(ctx context.Context, ao *ACPOptions) error {
	if err := ao.Agent.checkFlags(); err != nil {
		return err
	}
	// The server outlives any one config or store read: each request reads
	// them afresh, as a decode command would (no memo).
	server := *ao.Agent.F
	server.memo = nil
	f := &server
	srv := &acpServer{f: f, base: ao.Agent, conn: newRPCConn(f.IO.In, f.IO.Out), sessions: map[string]*acpSession{}}
	return srv.serve(ctx)
}

// acpServer is one client's connection and its sessions.
type acpServer struct {
	f    *Factory
	base *AgentOptions
	conn *rpcConn

	mu       sync.Mutex
	sessions map[string]*acpSession
	running  sync.WaitGroup
	// What the client offered: the file tools read and write through
	// fs/* (acpBuffers); decode does not use terminal/* (see the README).
	clientRead, clientWrite, clientTerminal bool
}

// acpSession is one session the client opened or loaded.
type acpSession struct {
	id, cwd string
	created *session.Session // before the first prompt of a new session

	mu     sync.Mutex
	mode   string
	allow  []string        // rules allowed "always" from the editor
	always map[string]bool // calls allowed "always" that no rule can name
	turn   *acpTurn        // the prompt running, if any
}

// acpTurn is a running prompt.
type acpTurn struct {
	stop      chan struct{} // the first-stage stop, closed by session/cancel
	stopOnce  sync.Once
	cancelled bool
	cancelAsk context.CancelFunc // ends a permission request in flight
}

func (t *acpTurn) cancel() {
	t.stopOnce.Do(func() {
		t.cancelled = true
		close(t.stop)
		t.cancelAsk()
	})
}

// serve reads requests until stdin ends. Requests run in their own
// goroutines (a prompt waits on the client's answers to permission
// requests, which this loop reads); at the end of input every running
// prompt is stopped at its next step boundary and waited for, so that its
// session is saved, and then the output is flushed.
func (s *acpServer) serve(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	type read struct {
		m   rpcMessage
		id  json.RawMessage
		err error
	}
	reads := make(chan read, 1) // never blocks the reader, which may outlive serve
	next := make(chan struct{}, 1)
	go func() { // the only reader of stdin; it may outlive serve on a signal
		for range next {
			m, id, err := s.conn.read()
			reads <- read{m, id, err}
			if err != nil && !isRPCError(err) {
				return
			}
		}
	}()
	defer close(next)
	for {
		next <- struct{}{}
		var r read
		select {
		case r = <-reads:
		case <-parent.Done():
			// SIGINT or SIGTERM: the running prompts are cancelled (each
			// records it and saves its session), then decode exits 130.
			s.conn.close()
			s.stopAll()
			s.running.Wait()
			return parent.Err()
		}
		m, id, err := r.m, r.id, r.err
		var re *rpcError
		switch {
		case errors.As(err, &re):
			s.conn.replyError(id, re)
			continue
		case err != nil:
			s.conn.close()
			s.stopAll()
			s.drain(cancel)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("acp: read stdin: %w", err)
		}
		if m.Method == "" { // a response to one of decode's requests
			s.conn.answer(m)
			continue
		}
		if m.Method == "session/cancel" || m.Method == "session/set_mode" {
			// In order with what comes next: a cancel sent before the
			// answer to a permission request is seen before it.
			s.handle(ctx, m)
			continue
		}
		s.running.Add(1)
		go func() {
			defer s.running.Done()
			s.handle(ctx, m)
		}()
	}
}

func isRPCError(err error) bool {
	var re *rpcError
	return errors.As(err, &re)
}

// acpDrainGrace is how long a closed stdin waits for running prompts to
// reach their step boundary before cancelling them outright (a model
// stream, a long command): either way their sessions are saved.
var acpDrainGrace = 10 * time.Second

// drain waits for the running requests, cancelling them after the grace.
func (s *acpServer) drain(cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(acpDrainGrace):
		fmt.Fprintln(s.f.IO.Err, "decode: stdin closed; cancelling the prompts still running")
		cancel()
		<-done
	}
}

// stopAll stops every running prompt at its next step boundary.
func (s *acpServer) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		sess.mu.Lock()
		if sess.turn != nil {
			sess.turn.cancel()
		}
		sess.mu.Unlock()
	}
}

type acpHandler func(ctx context.Context, params json.RawMessage) (any, error)

func (s *acpServer) handle(ctx context.Context, m rpcMessage) {
	handlers := map[string]acpHandler{
		"initialize":       s.initialize,
		"authenticate":     func(context.Context, json.RawMessage) (any, error) { return struct{}{}, nil },
		"session/new":      s.newSession,
		"session/load":     s.loadSession,
		"session/list":     s.listSessions,
		"session/prompt":   s.prompt,
		"session/set_mode": s.setMode,
		"session/cancel":   s.cancel,
	}
	h, ok := handlers[m.Method]
	if !ok {
		if m.ID != nil {
			s.conn.replyError(m.ID, &rpcError{Code: rpcMethodNotFound, Message: "method not found: " + m.Method})
		}
		return
	}
	result, err := h(ctx, m.Params)
	if m.ID == nil {
		return // a notification gets no answer
	}
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = &rpcError{Code: rpcInternalError, Message: err.Error()}
		}
		s.conn.replyError(m.ID, re)
		return
	}
	s.conn.reply(m.ID, result)
}

func invalidParams(format string, args ...any) error {
	return &rpcError{Code: rpcInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// decodeParams reads a request's params into v.
func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalidParams("invalid params: %v", err)
	}
	return nil
}

func (s *acpServer) initialize(_ context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion    int `json:"protocolVersion"`
		ClientCapabilities struct {
			FS struct {
				ReadTextFile  bool `json:"readTextFile"`
				WriteTextFile bool `json:"writeTextFile"`
			} `json:"fs"`
			Terminal bool `json:"terminal"`
		} `json:"clientCapabilities"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.clientRead, s.clientWrite = p.ClientCapabilities.FS.ReadTextFile, p.ClientCapabilities.FS.WriteTextFile
	s.clientTerminal = p.ClientCapabilities.Terminal
	s.mu.Unlock()
	return map[string]any{
		"protocolVersion": acpProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession": true,
			// Prompts are text and images (as decode ask -f sends
			// them); resource links and embedded text resources are
			// read as text (embeddedContext).
			"promptCapabilities":  map[string]bool{"image": true, "audio": false, "embeddedContext": true},
			"mcpCapabilities":     map[string]bool{"http": false, "sse": false},
			"sessionCapabilities": map[string]any{"list": map[string]any{}},
		},
		"agentInfo":   map[string]string{"name": "decode", "title": "decode", "version": s.f.Version},
		"authMethods": []any{},
	}, nil
}

// acpModes are decode's gate modes as ACP session modes.
var acpModes = []map[string]string{
	{"id": "default", "name": "Default", "description": "read-only tools run; edits and commands ask"},
	{"id": "edit", "name": "Edit", "description": "edits in the workspace run; other commands ask"},
	{"id": "plan", "name": "Plan", "description": "read-only: nothing is changed"},
	{"id": "bypass", "name": "Bypass", "description": "everything runs without asking (deny rules still apply)"},
}

func modeState(mode string) map[string]any {
	return map[string]any{"currentModeId": mode, "availableModes": acpModes}
}

// sessionDir checks a client's cwd: ACP requires an absolute path.
func sessionDir(cwd string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", invalidParams("cwd %q: give the session's working directory as an absolute path", cwd)
	}
	if _, err := (&Factory{Getwd: func() (string, error) { return cwd, nil }}).workDir(""); err != nil {
		return "", err
	}
	return filepath.Clean(cwd), nil
}

// storeFor checks a client's cwd and opens the session store it belongs to.
func (s *acpServer) storeFor(cwd string) (string, *session.Store, error) {
	dir, err := sessionDir(cwd)
	if err != nil {
		return "", nil, err
	}
	st, err := s.f.storeAt(dir)
	if err != nil {
		return "", nil, err
	}
	return dir, st, nil
}

func (s *acpServer) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	dir, st, err := s.storeFor(p.Cwd)
	if err != nil {
		return nil, err
	}
	created, err := st.Create(ctx)
	if err != nil {
		return nil, err
	}
	mode := s.defaultMode(dir)
	sess := &acpSession{id: created.ID(), cwd: dir, created: created, mode: mode, always: map[string]bool{}}
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	return map[string]any{"sessionId": sess.id, "modes": modeState(mode)}, nil
}

// defaultMode is the mode a new session starts in: --mode, else config's.
func (s *acpServer) defaultMode(dir string) string {
	cfg, _, err := s.f.loadConfig(repoRoot(dir))
	if err != nil {
		return firstNonEmpty(s.base.Mode, "default")
	}
	return gateMode(s.base, cfg)
}

func (s *acpServer) session(id string) (*acpSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, invalidParams("unknown session %q: create it with session/new or open it with session/load", id)
	}
	return sess, nil
}

func (s *acpServer) setMode(_ context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	mode, err := tools.ParseMode(p.ModeID)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	sess.mu.Lock()
	sess.mode = string(mode)
	sess.mu.Unlock()
	// The next prompt runs in it, and records the change as decode
	// resume --mode does.
	return struct{}{}, nil
}

func (s *acpServer) cancel(_ context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	sess.mu.Lock()
	if sess.turn != nil {
		sess.turn.cancel()
	}
	sess.mu.Unlock()
	return nil, nil
}

func (s *acpServer) listSessions(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	dir := p.Cwd
	if dir == "" {
		wd, err := s.f.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	dir, st, err := s.storeFor(dir)
	if err != nil {
		return nil, err
	}
	infos, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Updated.After(infos[j].Updated) })
	out := []map[string]any{}
	for _, in := range infos {
		if in.Damage != "" {
			continue
		}
		item := map[string]any{"sessionId": in.ID, "cwd": dir, "updatedAt": in.Updated.UTC().Format(time.RFC3339)}
		if in.Title != "" {
			item["title"] = in.Title
		}
		out = append(out, item)
	}
	return map[string]any{"sessions": out}, nil
}

// loadSession opens a recorded session and streams its history back as
// session/update notifications before answering.
func (s *acpServer) loadSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	dir, st, err := s.storeFor(p.Cwd)
	if err != nil {
		return nil, err
	}
	opened, err := st.Open(ctx, p.SessionID)
	if err != nil {
		return nil, invalidParams("session/load %s: %v", p.SessionID, err)
	}
	es := opened.Entries()
	spec, _ := session.SpecOf(es)
	mode := firstNonEmpty(spec.Mode, s.defaultMode(dir))
	id := opened.ID()
	replayHistory(es, firstNonEmpty(repoRoot(dir), dir), func(u map[string]any) { s.update(id, u) })
	sess := &acpSession{id: id, cwd: dir, mode: mode, always: map[string]bool{}}
	s.mu.Lock()
	s.sessions[id] = sess
	s.mu.Unlock()
	return map[string]any{"modes": modeState(mode)}, nil
}

// update sends one session/update notification.
func (s *acpServer) update(id string, u map[string]any) {
	s.conn.notify("session/update", map[string]any{"sessionId": id, "update": u})
}

// promptText joins a prompt's content blocks into the text the model
// reads: text as it is, resources as their text (or their URI), and
// images as a line naming each; the images go as attachments, as -f
// FILE sends them.
func promptText(blocks []json.RawMessage) (string, *attachments, error) {
	var parts []string
	var images *attachments
	for _, raw := range blocks {
		var b struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
			Resource struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", nil, invalidParams("prompt: %v", err)
		}
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			parts = append(parts, fmt.Sprintf("[%s](%s)", firstNonEmpty(b.Name, b.URI), b.URI))
		case "resource":
			parts = append(parts, fmt.Sprintf("<context uri=%q>\n%s\n</context>", b.Resource.URI, b.Resource.Text))
		case "image":
			if images == nil {
				images = &attachments{}
			}
			f, err := acpImage(b.MIMEType, b.Data, firstNonEmpty(b.URI, fmt.Sprintf("image %d", len(images.files)+1)))
			if err != nil {
				return "", nil, err
			}
			images.files = append(images.files, f)
			parts = append(parts, fmt.Sprintf("<image path=%q type=%q/>", f.Path, f.MIME))
		default:
			return "", nil, invalidParams("prompt: content of type %q is not supported (decode takes text, images and resources)", b.Type)
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "", nil, invalidParams("prompt: empty; send at least one text block")
	}
	return text, images, nil
}

func (s *acpServer) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	text, images, err := promptText(p.Prompt)
	if err != nil {
		return nil, err
	}
	askCtx, cancelAsk := context.WithCancel(ctx)
	defer cancelAsk()
	turn := &acpTurn{stop: make(chan struct{}), cancelAsk: cancelAsk}
	sess.mu.Lock()
	if sess.turn != nil {
		sess.mu.Unlock()
		return nil, invalidParams("session %s is already running a prompt; cancel it or wait for its answer", sess.id)
	}
	sess.turn = turn
	sess.mu.Unlock()
	defer func() {
		sess.mu.Lock()
		sess.turn = nil
		sess.mu.Unlock()
	}()
	err = s.runTurn(ctx, askCtx, sess, turn, text, images)
	sess.mu.Lock()
	cancelled := turn.cancelled
	sess.mu.Unlock()
	var le *agent.LimitError
	switch {
	case err == nil:
		return map[string]string{"stopReason": "end_turn"}, nil
	case cancelled && errors.Is(err, context.Canceled):
		return map[string]string{"stopReason": "cancelled"}, nil
	case errors.As(err, &le) || errors.Is(err, agent.ErrLimit):
		return map[string]string{"stopReason": "max_turn_requests"}, nil
	case errors.Is(err, agent.ErrPaused):
		s.update(sess.id, textChunk("agent_message_chunk", "\n\n[decode paused: "+err.Error()+"; continue with another prompt]"))
		return map[string]string{"stopReason": "end_turn"}, nil
	}
	return nil, err
}

func textChunk(kind, text string) map[string]any {
	return map[string]any{"sessionUpdate": kind, "content": map[string]string{"type": "text", "text": text}}
}

// runTurn runs one prompt as decode run (the session's first) or decode
// resume (later ones) would.
func (s *acpServer) runTurn(ctx, askCtx context.Context, sess *acpSession, turn *acpTurn, text string, images *attachments) error {
	f := *s.f
	f.memo = newFactoryMemo() // each prompt reads config afresh, as a decode run would
	quiet := *f.IO
	quiet.Out = f.IO.Err // nothing but protocol messages on stdout
	quiet.In, quiet.InPiped, quiet.TTY = strings.NewReader(""), false, nil
	f.IO = &quiet
	f.SoftStop = func() <-chan struct{} { return turn.stop }
	f.Prompting = nil

	o := *s.base
	o.F = &f
	o.Dir = sess.cwd
	o.Quiet = true
	o.Prompt = text
	o.Files, o.attached = nil, images
	sess.mu.Lock()
	o.Mode = sess.mode
	o.Allow = append(append([]string{}, s.base.Allow...), sess.allow...)
	created := sess.created
	sess.mu.Unlock()

	sink := newACPSink(s, sess.id, sess.cwd)
	o.sink = sink
	o.approve = s.approver(askCtx, sess, sink)
	s.mu.Lock()
	if s.clientRead || s.clientWrite {
		o.buffers = acpBuffers{conn: s.conn, session: sess.id, read: s.clientRead, write: s.clientWrite, stop: askCtx}
		sink.buf, sink.ctx = o.buffers, askCtx
	}
	s.mu.Unlock()
	d := &driver{noPrompt: true, turns: agent.DriverFunc(func(ctx context.Context, opts agent.Options, _ string) (agent.Outcome, error) {
		return agent.Run(ctx, opts, text)
	})}
	st, err := f.storeAt(sess.cwd)
	if err != nil {
		return err
	}
	opened, err := st.OpenTail(ctx, sess.id)
	var nf *session.NotFoundError
	if created != nil && errors.As(err, &nf) {
		// Nothing recorded yet: the first prompt starts the session.
		o.Opened = created
		return runAgentWith(ctx, &o, d)
	}
	if err != nil {
		return err
	}
	if err := o.continueSpec(opened.Entries(), sess.cwd); err != nil {
		return err
	}
	o.Session, o.Opened = sess.id, opened
	return runAgentWith(ctx, &o, d)
}

// acpBuffers reads and writes files through the client's fs/* methods, so
// that the model reads an editor's unsaved buffers and its changes land in
// them. The file tools pass paths already resolved and confined to the
// workspace, and use the disk when the client answers with an error.
type acpBuffers struct {
	conn        *rpcConn
	session     string
	read, write bool            // what the client offered
	stop        context.Context // ended by session/cancel, so a request the client never answers does not hold the turn
}

// callClient sends one fs/* request, given up when ctx or the turn ends.
func (b acpBuffers) callClient(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if b.stop != nil {
		defer context.AfterFunc(b.stop, cancel)()
	}
	return b.conn.call(ctx, method, params, result)
}

func (b acpBuffers) ReadText(ctx context.Context, abs string) (string, error) {
	if !b.read {
		return "", errors.ErrUnsupported
	}
	var r struct {
		Content string `json:"content"`
	}
	err := b.callClient(ctx, "fs/read_text_file", map[string]any{"sessionId": b.session, "path": abs}, &r)
	return r.Content, err
}

func (b acpBuffers) WriteText(ctx context.Context, abs, content string) error {
	if !b.write {
		return errors.ErrUnsupported
	}
	return b.callClient(ctx, "fs/write_text_file", map[string]any{"sessionId": b.session, "path": abs, "content": content}, nil)
}
