package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/session"
)

// ResumeOptions are the inputs of `decode resume`: the run flags, and the
// arguments, which name a session, a prompt, or both.
type ResumeOptions struct {
	Agent *AgentOptions
	Args  []string
}

// NewCmdResume builds `decode resume`. runF replaces the run function in tests.
func NewCmdResume(f *Factory, runF func(*cli.Context, *ResumeOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *ResumeOptions) error { return resumeRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a session: the latest of this repository, or the one named",
		ArgsUsage: "[SESSION] [PROMPT]",
		Description: `Continues a session with a follow-up PROMPT, or, with none, continues the
work it left open (a paused or interrupted run). The model context is rebuilt
from the session's entries. With one argument that names a session (an id, a
unique prefix, @ or @~N) that session is continued; otherwise the argument is
the prompt for the latest session. PROMPT falls back to piped stdin.

A session continues with what it was started with, recorded in its start
entry: model, --mode, --allow/--deny, --add-dir, --on-ask, the limits (as caps
for the whole task), --schema and the system prompt files. Flags given here
change them from now on; each change is printed ("mode: default → edit") and
recorded in the session, and permissions wider than the default that carry
over are named on stderr. -m picks the model of this resume only. A session being
written by another decode process is not touched (exit 6).

   decode resume "and now add tests"
   decode resume 3f2a "try another way"
   decode resume @~1 --mode edit
   decode resume -f after.png "this is how it looks now"
   decode resume --due          # from cron: every session whose sleep has ended
   decode fork 3f2a@12 && decode resume "try it without mocks"`,
		Flags: append(agentFlags(true), lastMessageFlag(), attachFlag(),
			&cli.BoolFlag{Name: "due", Usage: "continue every paused session whose wait (a long sleep) has ended; for cron"}),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := agentOptions(f, "run", c)
			o.Prompt = ""
			if c.Bool("due") {
				return resumeDue(c.Context, &ResumeOptions{Agent: o, Args: c.Args().Slice()})
			}
			return runF(c, &ResumeOptions{Agent: o, Args: c.Args().Slice()})
		},
	}
}

func resumeRun(ctx context.Context, ro *ResumeOptions) error {
	o := ro.Agent
	if o.NoSession {
		return usageErrorf("--no-session: resume continues a recorded session")
	}
	if err := o.checkFlags(); err != nil {
		return err
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	if o.attached, err = readAttachments(dir, o.Files, o.MaxStdin); err != nil {
		return unstarted(err)
	}
	st, err := o.F.storeAt(dir)
	if err != nil {
		return err
	}
	id, prompt, err := resumeTarget(ctx, st.Sessions(), ro.Args)
	if err != nil {
		return err
	}
	in, prompt, err := stdinFor(o.F.IO, &AgentOptions{Prompt: prompt, NoStdin: o.NoStdin})
	if err != nil {
		return err
	}
	if prompt, err = resumePrompt(in, prompt, o.MaxStdin); err != nil {
		return err
	}
	if prompt == "" && o.attached != nil {
		return unstarted(usageErrorf("-f attaches files to a prompt; give one: decode resume %s \"PROMPT\" -f FILE", id))
	}
	prompt = o.attached.prompt(prompt)
	s, err := st.OpenTail(ctx, id) // from the last compaction on: a long session resumes as fast as a short one
	if err != nil {
		return err
	}
	warnProblems(o.F.IO.Err, s)
	es := s.Entries()
	if prompt == "" && !agent.Resumable(es) && !st.Queue(id).Waiting() {
		return usageErrorf("session %s has nothing to continue (its last turn is complete); give the next prompt: decode resume %s \"PROMPT\"", id, id)
	}
	if err := o.continueSpec(es, dir); err != nil {
		return err
	}
	o.Session, o.Opened = id, s
	return runAgentWith(ctx, o, &driver{noPrompt: true,
		turns: agent.DriverFunc(func(ctx context.Context, opts agent.Options, _ string) (agent.Outcome, error) {
			return agent.Run(ctx, opts, prompt)
		})})
}

// resumeTarget works out which session and prompt the arguments mean. The
// first argument is a session when it names one; when it names none and
// does not look like a session reference (prose, not an id), all the
// arguments are the prompt for the latest session. An ambiguous prefix, or
// an id-like word that matches nothing, is an error listing candidates.
func resumeTarget(ctx context.Context, st session.Sessions, args []string) (id, prompt string, err error) {
	if len(args) == 0 {
		id, err = st.Resolve(ctx, "@")
		return id, "", err
	}
	id, err = st.Resolve(ctx, args[0])
	var nf *session.NotFoundError
	switch {
	case err == nil:
		return id, strings.Join(args[1:], " "), nil
	case errors.As(err, &nf) && !session.LooksLikeRef(strings.TrimSpace(args[0])):
		id, err = st.Resolve(ctx, "@")
		return id, strings.Join(args, " "), err
	}
	return "", "", err
}

// resumePrompt joins PROMPT with piped stdin like readPrompt, except that
// both may be empty: a resume may have no prompt.
func resumePrompt(s *IOStreams, prompt string, limit int64) (string, error) {
	if !s.InPiped {
		return strings.TrimSpace(prompt), nil
	}
	if limit <= 0 {
		limit = defaultMaxStdin
	}
	data, err := io.ReadAll(io.LimitReader(s.In, limit+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return strings.TrimSpace(prompt), nil
	}
	return readPrompt(&IOStreams{In: bytes.NewReader(data), InPiped: true}, prompt, limit)
}

// sessionModel returns the model a session continues with and the command
// that started it.
func sessionModel(es []session.Entry) (model, command string) {
	for _, e := range es {
		switch e.Type {
		case session.TypeStart:
			var d session.StartData
			if e.Decode(&d) == nil {
				model, command = d.Model, d.Command
			}
		case session.TypeFork:
			var d session.ForkData
			if e.Decode(&d) == nil && d.Model != "" {
				model = d.Model
			}
		}
	}
	return model, command
}
