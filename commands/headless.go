package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"decode/agent"
	"decode/session"
	"decode/tools"
)

// wireHeadless connects a run to what drives it from outside the process:
// the on-ask policy, limits, the first-signal stop, the session's message
// queue (decode steer) and the configured hooks.
func (f *Factory) wireHeadless(opts *agent.Options, o *AgentOptions, cfg Config, sess *session.Session, dir, root string, warn func(string)) error {
	switch o.OnAsk {
	case "", "pause", "deny":
		opts.OnAsk = o.OnAsk
		opts.AllowHint = "ask the user to allow it with --allow or --mode"
	default:
		return usageErrorf("--on-ask %q: use pause or deny", o.OnAsk)
	}
	opts.MaxSteps, opts.MaxCost, opts.Timeout = o.MaxSteps, o.MaxCost, o.Timeout
	if o.MaxCost > 0 && opts.Cost == nil {
		warn("--max-cost has no effect: the price of " + opts.Model.Name() + " is unknown")
	}
	if f.SoftStop != nil {
		opts.Stop = f.SoftStop()
	}
	if sess != nil {
		opts.VerifyDecision = f.decisionVerifier(firstNonEmpty(root, dir), sess.ID())
		q := sess.Store().Queue(sess.ID())
		q.Warn = warn
		opts.Steer = func() []string { return q.Take(false) }
		opts.FollowUp = func() []string { return q.Take(true) }
	}
	if cmds := cfg.Hooks.commands(); len(cmds) > 0 {
		timeout, err := cfg.Hooks.timeout()
		if err != nil {
			return err
		}
		hookDir := root
		if hookDir == "" {
			hookDir = dir
		}
		opts.Hooks = &agent.Hooks{
			Commands: cmds, Dir: hookDir, Timeout: timeout,
			Env:     tools.ScrubEnv(f.Environ(), f.secretNames(cfg)),
			Secrets: f.redactor(),
		}
		if sess != nil {
			opts.Hooks.Session = sess.ID()
		}
	}
	return nil
}

// waitTools are the tools that may pause a headless run: ask_user (which
// asks at the terminal when there is one) and sleep. decode ask and plan,
// which answer at once, do without them.
func (f *Factory) waitTools(o *AgentOptions) []tools.Tool {
	if o.Command == "ask" || o.Command == "plan" {
		return nil
	}
	var ask tools.Asker
	if f.IO.TTY != nil {
		ask = ttyAsker(f.IO)
	}
	return []tools.Tool{tools.NewAskUser(ask), tools.NewSleep()}
}

// ttyAsker asks the model's question on the terminal.
func ttyAsker(s *IOStreams) tools.Asker {
	return func(_ context.Context, q string) (string, error) {
		tty, err := s.TTY()
		if err != nil {
			return "", err
		}
		defer tty.Close()
		fmt.Fprintf(tty, "decode asks: %s\n> ", q)
		line, err := bufio.NewReader(tty).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimSpace(line), nil
	}
}
