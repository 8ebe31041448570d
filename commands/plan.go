package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/secrets"
	"decode/session"
)

// maxPlanFile caps --plan-file.
const maxPlanFile = 1 << 20

// NewCmdPlan builds `decode plan`. runF replaces the run function in tests.
func NewCmdPlan(f *Factory, runF func(*cli.Context, *AgentOptions) error) *cli.Command {
	if runF == nil {
		runF = planRun
	}
	return &cli.Command{
		Name:      "plan",
		Usage:     "explore with read-only tools and print a numbered plan of 3–8 steps",
		ArgsUsage: "[TASK]",
		Description: `Plans a task without doing it: the model explores the code with read-only
tools, then answers with a numbered plan of 3 to 8 steps, each naming the files
it touches and how to verify it. Only the plan is printed on stdout; it is also
saved in the session as a plan entry, which decode run --plan carries out. An
answer that is not such a plan is sent back once with what is wrong; a second
bad answer exits 1.

   decode plan "add rate limiting to the client" > plan.md
   decode run --plan @          # carry out the latest plan
   decode run --plan-file plan.md`,
		Flags:        append(agentFlags(false), lastMessageFlag()),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "plan", c)
			o.Mode = "plan"
			return runF(c, o)
		},
	}
}

// runRun is decode run: a plain run, or a run that carries out a plan
// (--plan, --plan-file); either with --remember (see AgentOptions.turns).
func runRun(c *cli.Context, o *AgentOptions) error {
	switch {
	case o.Plan != "" && o.PlanFile != "":
		return usageErrorf("give --plan SESSION or --plan-file FILE, not both")
	case o.Plan != "" || o.PlanFile != "":
		return runPlanned(c.Context, o)
	}
	return agentRun(c, o)
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

// planRun is decode plan.
func planRun(c *cli.Context, o *AgentOptions) error {
	return runAgentWith(c.Context, o, &driver{turns: agent.DriverFunc(func(ctx context.Context, opts agent.Options, prompt string) (agent.Outcome, error) {
		return makePlan(ctx, o, opts, prompt)
	})})
}

// makePlan runs the planning turn, sends a malformed answer back once with
// what is wrong, records the plan and prints it on stdout.
func makePlan(ctx context.Context, o *AgentOptions, opts agent.Options, task string) (agent.Outcome, error) {
	if !o.JSON {
		// stdout gets the plan alone, so `decode plan … > plan.md` works.
		opts.Sink = dropText(opts.Sink)
	}
	out, err := agent.Run(ctx, opts, task)
	if err != nil {
		return out, err
	}
	steps, perr := parsePlan(out.Text, planAnswerRules)
	if perr != nil {
		opts.Start, opts.Respec = nil, nil
		more, err := agent.Run(ctx, opts, fixPlanPrompt(perr))
		out = out.Add(more)
		if err != nil {
			return out, err
		}
		if steps, perr = parsePlan(out.Text, planAnswerRules); perr != nil {
			err := fmt.Errorf("the model's answer is not a usable plan, even after it was told what was wrong: %v", perr)
			return out, closeTurns(ctx, opts, err)
		}
	}
	plan := session.PlanData{Task: task, Steps: steps}
	if err := opts.Log.Append(ctx, session.NewEntry(session.TypePlan, plan, fmt.Sprintf("plan of %d steps", len(steps)))); err != nil {
		return out, fmt.Errorf("record plan: %w", err)
	}
	if err := closeTurns(ctx, opts, nil); err != nil {
		return out, err
	}
	if !o.JSON {
		fmt.Fprintln(o.F.IO.Out, strings.TrimSpace(out.Text))
	}
	return out, nil
}

// fixPlanPrompt sends a malformed plan back to the model.
func fixPlanPrompt(problem error) string {
	return "That answer is not a usable plan: " + problem.Error() + ".\n" +
		"Answer again with only the plan: a numbered list of 3 to 8 steps, each saying what to change, " +
		"then \"Files:\" with the files it touches and \"Verify:\" with how to check it, like:\n" +
		"1. Add retry with backoff to Client.Do. Files: client.go, client_test.go. Verify: go test ./client"
}

// dropText keeps a run's answer text from the sink (and so from stdout).
func dropText(sink func(agent.Event)) func(agent.Event) {
	return func(ev agent.Event) {
		if ev.Type != agent.EventText {
			sink(ev)
		}
	}
}

// closeTurns ends a command of several turns after its own entries (plan,
// plan_step). Each agent.Run ends with an end entry, but a session's
// status is read from its last entry, so the command closes with one more;
// it carries no usage, turns or time, so totals summed over end entries
// stay right. A failure of the command's own (a plan that does not parse,
// a step that failed twice) is recorded as an error first.
func closeTurns(ctx context.Context, opts agent.Options, err error) error {
	ctx = context.WithoutCancel(ctx)
	var es []session.Entry
	status := agent.StatusOf(err)
	if err != nil {
		if status != session.StatusLimit {
			status = session.StatusError
		}
		es = append(es, session.NewEntry(session.TypeError, session.ErrorData{Message: err.Error()}, string(status)))
	}
	code := status.ExitCode(false)
	es = append(es, session.NewEntry(session.TypeEnd, session.EndData{Status: status, Exit: code}, string(status)))
	if aerr := opts.Log.Append(ctx, es...); aerr != nil && err == nil {
		return fmt.Errorf("record session: %w", aerr)
	}
	return err
}

// runPlanned is decode run --plan SESSION / --plan-file FILE.
func runPlanned(ctx context.Context, o *AgentOptions) error {
	if strings.TrimSpace(o.Prompt) != "" {
		return usageErrorf("run --plan carries out a plan and takes no TASK; to change the plan, edit it and use --plan-file")
	}
	plan, err := loadPlan(ctx, o)
	if err != nil {
		return err
	}
	p := &planExec{o: o, plan: plan}
	return runAgentWith(ctx, o, &driver{noPrompt: true, turns: agent.DriverFunc(p.run)})
}

// loadPlan reads the plan to carry out: the last plan entry of a session,
// or a plan file (numbered steps; Files: and Verify: optional).
func loadPlan(ctx context.Context, o *AgentOptions) (session.PlanData, error) {
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return session.PlanData{}, err
	}
	if o.PlanFile != "" {
		path := o.PlanFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		fh, err := secrets.Open(path, firstNonEmpty(repoRoot(dir), dir), o.F.configDir())
		if err != nil {
			return session.PlanData{}, usageErrorf("--plan-file: %v", err)
		}
		defer fh.Close()
		data, err := io.ReadAll(io.LimitReader(fh, maxPlanFile))
		if err != nil {
			return session.PlanData{}, fmt.Errorf("--plan-file %s: %w", path, err)
		}
		steps, err := parsePlan(string(data), planFileRules)
		if err != nil {
			return session.PlanData{}, usageErrorf("--plan-file %s: %v", path, err)
		}
		return session.PlanData{Steps: steps, From: "file " + path}, nil
	}
	st, err := o.F.storeAt(dir)
	if err != nil {
		return session.PlanData{}, err
	}
	s, err := st.Open(ctx, o.Plan)
	if err != nil {
		return session.PlanData{}, err
	}
	es := s.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		var p session.PlanData
		if es[i].Type == session.TypePlan && es[i].Decode(&p) == nil && len(p.Steps) > 0 {
			p.From, p.Replan = "session "+s.ID(), 0
			return p, nil
		}
	}
	return session.PlanData{}, fmt.Errorf("session %s has no plan; make one with decode plan TASK", s.ID())
}

// planExec carries out a plan in one session: each step is a user turn
// that ends with a line STEP DONE or STEP FAILED: reason, recorded as a
// plan_step entry. The first step the model says failed is sent back with
// its reason for replacement steps for the rest of the plan; a second
// failure stops the run. A step stopped by a limit (turns, steps, cost,
// time) fails too, but stops the run at once: limits hold for the whole
// session, so a re-plan would only hit it again.
type planExec struct {
	o         *AgentOptions
	plan      session.PlanData
	replanned bool
	sink      *stepSink
}

// stepFailedError is a plan step that failed after the plan was already
// re-planned once, or that a limit stopped.
type stepFailedError struct {
	step   session.PlanStep
	of     int
	reason string
	// cause is the limit that stopped the step, if one did.
	cause error
}

func (e *stepFailedError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("plan step %d of %d (%q) stopped: %s", e.step.N, e.of, clipText(e.step.Text, 80), e.reason)
	}
	return fmt.Sprintf("plan step %d of %d failed after the plan was re-planned once (%q): %s",
		e.step.N, e.of, clipText(e.step.Text, 80), e.reason)
}

func (e *stepFailedError) Unwrap() error { return e.cause }

func (p *planExec) run(ctx context.Context, opts agent.Options, _ string) (agent.Outcome, error) {
	p.sink = &stepSink{next: opts.Sink}
	opts.Sink = p.sink.event
	if opts.Start != nil {
		// The session opens with the plan it carries out.
		err := opts.Log.Append(ctx,
			session.NewEntry(session.TypeStart, *opts.Start, opts.Start.Command+" "+opts.Start.Model),
			session.NewEntry(session.TypePlan, p.plan, "plan from "+p.plan.From))
		if err != nil {
			return agent.Outcome{}, fmt.Errorf("record session: %w", err)
		}
		opts.Start, opts.Respec = nil, nil
	}
	var total agent.Outcome
	for i := 0; i < len(p.plan.Steps); i++ {
		step, of := p.plan.Steps[i], len(p.plan.Steps)
		p.say("step %d of %d: %s", step.N, of, clipText(step.Text, 100))
		p.sink.newStep()
		out, err := agent.Run(ctx, opts, p.stepPrompt(i))
		total = total.Add(out)
		res := readStepResult(out.Text)
		switch {
		case errors.Is(err, agent.ErrLimit):
			res = stepResult{failed: true, marked: true, note: err.Error()}
		case err != nil:
			return total, err // a provider failure or an interrupt stops the run as it would any run
		case !res.marked:
			p.warn("step %d of %d ended without STEP DONE or STEP FAILED; taken as done", step.N, of)
		}
		if err := p.record(ctx, opts, step.N, res); err != nil {
			return total, err
		}
		if !res.failed {
			continue
		}
		if p.replanned || err != nil {
			return total, closeTurns(ctx, opts, &stepFailedError{step: step, of: of, reason: res.note, cause: err})
		}
		p.warn("step %d of %d failed: %s; asking the model to re-plan the rest", step.N, of, res.note)
		more, err := p.replan(ctx, opts, i, res.note)
		total = total.Add(more)
		if err != nil {
			return total, err
		}
		i-- // step i is now the first replacement step
	}
	return total, closeTurns(ctx, opts, nil)
}

// record appends the plan_step entry of a finished step.
func (p *planExec) record(ctx context.Context, opts agent.Options, n int, res stepResult) error {
	status := "done"
	if res.failed {
		status = "failed"
	}
	e := session.NewEntry(session.TypePlanStep, session.PlanStepData{N: n, Status: status, Note: res.note},
		fmt.Sprintf("step %d %s", n, status))
	if err := opts.Log.Append(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("record session: %w", err)
	}
	if !res.failed {
		p.say("step %d of %d done", n, len(p.plan.Steps))
	}
	return nil
}

// replan sends step i's failure to the model and replaces the plan's
// steps from i on with the steps it answers; the revised plan is recorded.
// An answer that does not parse ends the run.
func (p *planExec) replan(ctx context.Context, opts agent.Options, i int, reason string) (agent.Outcome, error) {
	p.replanned = true
	step, of := p.plan.Steps[i], len(p.plan.Steps)
	prompt := fmt.Sprintf("Step %d of %d failed: %s\n\n"+
		"Re-plan the rest of the task: answer with only a numbered list of 1 to 8 steps that replace steps %d to %d, "+
		"each saying what to do, then \"Files:\" and \"Verify:\" as in the plan. Do not carry them out yet; "+
		"I will send them one at a time.", step.N, of, reason, step.N, of)
	p.sink.newStep()
	out, err := agent.Run(ctx, opts, prompt)
	if err != nil {
		return out, err
	}
	steps, perr := parsePlan(out.Text, replanRules)
	if perr != nil {
		err := fmt.Errorf("plan step %d of %d failed (%s) and the model's re-plan is not usable: %v", step.N, of, reason, perr)
		return out, closeTurns(ctx, opts, err)
	}
	revised := append([]session.PlanStep(nil), p.plan.Steps[:i]...)
	for _, s := range steps {
		s.N = len(revised) + 1
		revised = append(revised, s)
	}
	p.plan.Steps, p.plan.Replan = revised, step.N
	e := session.NewEntry(session.TypePlan, p.plan, fmt.Sprintf("re-plan from step %d", step.N))
	if err := opts.Log.Append(ctx, e); err != nil {
		return out, fmt.Errorf("record session: %w", err)
	}
	return out, nil
}

// stepPrompt is the user turn of step i: the first also carries the task
// and the whole plan. It states the contract readStepResult reads.
func (p *planExec) stepPrompt(i int) string {
	var b strings.Builder
	steps := p.plan.Steps
	if i == 0 && !p.replanned {
		b.WriteString("Carry out this plan one step at a time; I will send each step as its own message.\n\n")
		if t := strings.TrimSpace(p.plan.Task); t != "" {
			b.WriteString("Task: " + t + "\n\n")
		}
		b.WriteString("Plan:\n")
		for _, s := range steps {
			b.WriteString(formatStep(s) + "\n")
		}
		b.WriteString("\n")
	}
	s := steps[i]
	fmt.Fprintf(&b, "Step %d of %d: %s\n", s.N, len(steps), s.Text)
	if len(s.Files) > 0 {
		b.WriteString("Files: " + strings.Join(s.Files, ", ") + "\n")
	}
	if s.Verify != "" {
		b.WriteString("Verify: " + s.Verify + "\n")
	}
	b.WriteString("\nDo this step only, and check it as Verify says. End your reply with a last line " +
		"\"STEP DONE\", or \"STEP FAILED: <reason>\" if you could not complete it.")
	return b.String()
}

// say prints progress on stderr unless quiet.
func (p *planExec) say(format string, args ...any) {
	if !p.o.Quiet {
		fmt.Fprintf(p.o.F.IO.Err, "decode: "+format+"\n", args...)
	}
}

// warn prints a warning on stderr.
func (p *planExec) warn(format string, args ...any) {
	fmt.Fprintf(p.o.F.IO.Err, "decode: warning: "+format+"\n", args...)
}

// stepSink passes a run's events on, starting each step's text on a line
// of its own. A step's STEP DONE / STEP FAILED line is decode's contract,
// not part of the answer: it is kept from stdout (the step's progress line
// on stderr says the same).
type stepSink struct {
	next func(agent.Event)
	mu   sync.Mutex
	// midLine is whether the last text did not end with a newline; fresh
	// is whether a step started since the last text.
	midLine, fresh bool
	// held is the start of a line that may be a STEP marker, kept back
	// until the line ends or another event comes.
	held string
	// lineOpen is whether part of the current line was already passed on
	// (so it is not a marker line); blanks are blank lines held back, as
	// they come before a marker line or more text.
	lineOpen bool
	blanks   string
}

func (s *stepSink) newStep() {
	s.mu.Lock()
	s.fresh = true
	s.mu.Unlock()
}

func (s *stepSink) event(ev agent.Event) {
	s.mu.Lock()
	var out []agent.Event
	if ev.Type == agent.EventText {
		if t := s.filter(ev.Text, false); t != "" {
			ev.Text = s.lineStart(t)
			out = append(out, ev)
		}
	} else {
		if t := s.filter("", true); t != "" {
			out = append(out, agent.Event{Type: agent.EventText, Text: s.lineStart(t)})
		}
		if ev.Type == agent.EventToolCall {
			s.midLine = false // the renderer ends the line before a tool line
		}
		out = append(out, ev)
	}
	s.mu.Unlock()
	if s.next != nil {
		for _, e := range out {
			s.next(e)
		}
	}
}

// lineStart starts a new step's first text on a line of its own.
func (s *stepSink) lineStart(t string) string {
	if s.fresh && s.midLine {
		t = "\n" + t
	}
	s.fresh = false
	s.midLine = !strings.HasSuffix(t, "\n")
	return t
}

// filter passes text on line by line, dropping STEP marker lines; a line
// that may still become one is held until it ends or end is set.
func (s *stepSink) filter(text string, end bool) string {
	var b strings.Builder
	rest := s.held + text
	s.held = ""
	for rest != "" {
		line, after, complete := strings.Cut(rest, "\n")
		rest = after
		if !s.lineOpen && maybeStepMarker(line) {
			if !complete && !end {
				s.held = line
				break
			}
			if isStepMarker(line) {
				s.blanks = "" // dropped with its newline and the blank lines before it
				continue
			}
			if complete && strings.TrimSpace(line) == "" {
				s.blanks += line + "\n"
				continue
			}
		}
		b.WriteString(s.blanks)
		s.blanks = ""
		b.WriteString(line)
		if complete {
			b.WriteString("\n")
		}
		s.lineOpen = !complete && (s.lineOpen || line != "")
	}
	if end {
		s.lineOpen = false // the next response starts a line of its own
		s.blanks = ""
	}
	return b.String()
}

// stepMarkerLine trims what readStepResult allows around a marker.
func stepMarkerLine(line string) string {
	return strings.ToUpper(strings.Trim(strings.TrimSpace(line), "*_`#> "))
}

// isStepMarker is whether line is a STEP DONE / STEP FAILED line.
func isStepMarker(line string) bool {
	l := stepMarkerLine(line)
	return strings.HasPrefix(l, "STEP DONE") || strings.HasPrefix(l, "STEP FAILED")
}

// maybeStepMarker is whether line is, or may grow into, a marker line.
func maybeStepMarker(line string) bool {
	l := stepMarkerLine(line)
	return l == "" || isStepMarker(line) || strings.HasPrefix("STEP DONE", l) || strings.HasPrefix("STEP FAILED", l)
}
