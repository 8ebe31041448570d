package commands

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"sync"

	"decode/agent"
	"decode/agent/llm"
	"decode/session"
)

// sink is where a run reports: the text renderer, the JSON event stream
// (--json), the text renderer that prints only the validated JSON
// (--schema), each with the terminal's spinner when stderr is one. The
// lock is held while a person is asked on the terminal, so that nothing
// is printed over the question.
type sink interface {
	sync.Locker
	// event reports what the loop did.
	event(agent.Event)
	// warn reports something a person should know.
	warn(string)
	// begin says the run is about to start, with its session known; the
	// sink may wrap opts (the spinner watches the model's requests).
	begin(opts *agent.Options, info runInfo)
	// finish reports how the run ended.
	finish(agent.Outcome, error)
	// close is called when the command returns, with its error; it
	// reports an error that came before the run (or after finish) once.
	close(error)
}

// runInfo describes a run for the start of its event stream.
type runInfo struct {
	Session, Model, Mode, Cwd, Command, Version string
}

// newSink picks the sink for a run's options and streams.
func newSink(f *Factory, o *AgentOptions) sink {
	if o.sink != nil {
		return o.sink
	}
	term := newTerminal(f.IO, f.Getenv)
	if o.JSON {
		return newJSONRenderer(f.IO.Out, o.SchemaFile != "")
	}
	s := *f.IO
	if term.color || term.spin {
		s.Err = term.writer(f.IO.Err)
		if f.NoticeTo != nil {
			f.NoticeTo(s.Err)
		}
	}
	var out sink = newRenderer(&s, o.Quiet)
	if o.SchemaFile != "" {
		out = &schemaText{sink: out, io: &s}
	}
	if term.spin && !o.Quiet {
		out = &spinSink{sink: out, spin: term.spinner}
	}
	return out
}

// The text renderer is a sink as it is: it has nothing to say at the
// start, and Main prints the error that ends a command.

// Lock holds the renderer's output while a person is asked. The question
// starts on a line of its own: the streamed line is ended first, and the
// narration held back (stdout not a terminal) is shown on stderr, so the
// person reads what the model said before what it asks to do.
func (r *renderer) Lock() {
	r.mu.Lock()
	r.narration()
	if !r.atLineStart {
		r.text("\n")
	}
}

// Unlock releases what Lock held.
func (r *renderer) Unlock() { r.mu.Unlock() }

func (r *renderer) begin(*agent.Options, runInfo) {}

func (r *renderer) close(error) {}

// schemaText is the text output of a --schema run: tool lines on stderr
// as usual, but no streamed text on stdout, only the answer once it is
// valid (runSchema leaves the validated JSON in Outcome.Text).
type schemaText struct {
	sink
	io *IOStreams
}

func (s *schemaText) event(ev agent.Event) {
	if ev.Type != agent.EventText {
		s.sink.event(ev)
	}
}

func (s *schemaText) finish(out agent.Outcome, err error) {
	s.sink.finish(agent.Outcome{Usage: out.Usage, Turns: out.Turns, Cost: out.Cost}, err)
	if err == nil {
		s.Lock()
		defer s.Unlock()
		s.io.Out.Write([]byte(out.Text + "\n"))
	}
}

// spinSink shows the spinner while a model request waits for its first
// output, and stops it before anything else is printed.
type spinSink struct {
	sink
	spin *spinner
}

func (s *spinSink) begin(opts *agent.Options, info runInfo) {
	s.sink.begin(opts, info)
	if opts.Model != nil {
		opts.Model = &spinModel{Model: opts.Model, spin: s.spin}
	}
}

func (s *spinSink) event(ev agent.Event) {
	switch ev.Type {
	case agent.EventRetry, agent.EventWarning:
		// The request goes on: the line is printed above the spinner.
	default:
		s.spin.Stop()
	}
	s.sink.event(ev)
}

func (s *spinSink) Lock() {
	s.spin.Stop()
	s.sink.Lock()
}

func (s *spinSink) finish(out agent.Outcome, err error) {
	s.spin.Stop()
	s.sink.finish(out, err)
}

func (s *spinSink) close(err error) {
	s.spin.Stop()
	s.sink.close(err)
}

// spinModel starts the spinner when a request is sent.
type spinModel struct {
	llm.Model
	spin *spinner
}

func (m *spinModel) Stream(ctx context.Context, req llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		m.spin.Start(shortModel(m.Model.Name()))
		for ev := range m.Model.Stream(ctx, req) {
			if !yield(ev) {
				return
			}
		}
	}
}

// shortModel is a model's name as the spinner shows it: without the
// provider, and a script by its file name.
func shortModel(name string) string {
	p, m, ok := strings.Cut(name, ":")
	switch {
	case !ok:
		return name
	case p == "script":
		return filepath.Base(m)
	}
	return m
}

// sessionID is the id of a recorded session, "" with --no-session.
func sessionID(s *session.Session) string {
	if s == nil {
		return ""
	}
	return s.ID()
}
