package commands

import (
	"context"
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
		Flags:        append(agentFlags(false), lastMessageFlag(), attachFlag()),
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

// planRun is decode plan: only the plan is printed on stdout (with
// --json, the events alone), so `decode plan … > plan.md` works.
func planRun(c *cli.Context, o *AgentOptions) error {
	d := &driver{turns: agent.Plan{}}
	if !o.JSON {
		d.turns = agent.Plan{Planned: func(text string) { fmt.Fprintln(o.F.IO.Out, strings.TrimSpace(text)) }}
		d.render = func(sink func(agent.Event), p agent.Progress) (func(agent.Event), agent.Progress) {
			return dropText(sink), p
		}
	}
	return runAgentWith(c.Context, o, d)
}

// dropText keeps a run's answer text from the sink (and so from stdout).
func dropText(sink func(agent.Event)) func(agent.Event) {
	return func(ev agent.Event) {
		if ev.Type != agent.EventText {
			sink(ev)
		}
	}
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
	return runAgentWith(ctx, o, &driver{noPrompt: true, turns: agent.PlanExec{Plan: plan}, render: stepRender})
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
		steps, err := agent.ParsePlanFile(string(data))
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

// stepRender starts each step's text on a line of its own and keeps its
// STEP marker line from the output.
func stepRender(sink func(agent.Event), p agent.Progress) (func(agent.Event), agent.Progress) {
	s := &stepSink{next: sink}
	p.Turn = s.newStep
	return s.event, p
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
