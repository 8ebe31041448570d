package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/session"
)

// Decisions recorded by approve, deny and answer.
const (
	decisionAllow  = session.DecisionAllow
	decisionDeny   = session.DecisionDeny
	decisionAnswer = session.DecisionAnswer
)

// DecideOptions are the inputs of `decode approve`, `decode deny` and
// `decode answer`.
type DecideOptions struct {
	F        *Factory
	Dir      string
	Decision string // allow, deny or answer
	Session  string
	// Args are the arguments after SESSION: [CALL] [REASON] or [CALL] TEXT.
	Args []string
}

// NewCmdApprove builds `decode approve`.
func NewCmdApprove(f *Factory, runF func(*cli.Context, *DecideOptions) error) *cli.Command {
	return decideCmd(f, runF, decisionAllow, "approve", "SESSION [CALL]",
		"approve the tool calls a paused session waits for",
		`Approves the tool calls a paused run waits for (all of them, or the one
CALL id names), so that decode resume runs them. The approval is an entry in
the session, bound to the exact call (tool and arguments) and signed: a MAC
with your approval key ($XDG_STATE_HOME/decode/keys/approval.key), or, with
approval_signing = "ssh" in your config, your SSH key (git config
user.signingkey, user.email), which a resume on another machine checks
against git's gpg.ssh.allowedSignersFile. A decision that does not verify
(altered, forged, copied from another session or call, or unsigned) is
refused at resume, naming the call; give it again with decode approve.

   decode approve @
   decode approve @ call_3_1 && decode resume @`)
}

// NewCmdDeny builds `decode deny`.
func NewCmdDeny(f *Factory, runF func(*cli.Context, *DecideOptions) error) *cli.Command {
	return decideCmd(f, runF, decisionDeny, "deny", "SESSION [CALL] [REASON]",
		"refuse the tool calls a paused session waits for",
		`Refuses the tool calls a paused run waits for (all of them, or the one CALL
id names). On decode resume the model sees the refusal with REASON and adapts.

   decode deny @ "use go get -u=patch instead"
   decode deny @ call_3_2 "not on main"`)
}

// NewCmdAnswer builds `decode answer`.
func NewCmdAnswer(f *Factory, runF func(*cli.Context, *DecideOptions) error) *cli.Command {
	return decideCmd(f, runF, decisionAnswer, "answer", "SESSION [CALL] TEXT",
		"answer the question a paused session asks",
		`Answers the question (ask_user) a paused run waits on; decode resume gives
TEXT to the model as the answer.

   decode answer @ "yes, v2"`)
}

func decideCmd(f *Factory, runF func(*cli.Context, *DecideOptions) error, decision, name, args, usage, desc string) *cli.Command {
	if runF == nil {
		runF = decideRun
	}
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		ArgsUsage:   args,
		Description: desc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || (decision == decisionAnswer && c.NArg() < 2) {
				return usageErrorf("usage: decode %s %s", name, args)
			}
			return runF(c, &DecideOptions{F: f, Dir: c.String("dir"), Decision: decision, Session: c.Args().First(), Args: c.Args().Tail()})
		},
	}
}

func decideRun(c *cli.Context, o *DecideOptions) error {
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	s, err := st.Sessions().Open(c.Context, o.Session)
	if err != nil {
		return err
	}
	if err := s.Lock(); err != nil {
		return fmt.Errorf("session %s is running (%w); decisions are for paused sessions", s.ID(), err)
	}
	defer s.Unlock()
	targets, text, err := decisionTargets(agent.Pending(s.Entries()), o)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.ID(), err)
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	cfg, _, err := o.F.loadConfig(repoRoot(dir))
	if err != nil {
		return err
	}
	var ds []session.Decision
	for _, w := range targets {
		d := session.ApprovalData{CallID: w.Request.CallID, Hash: w.Request.Hash, Decision: o.Decision}
		if o.Decision == decisionAnswer {
			d.Answer = text
		} else {
			d.Reason = text
		}
		if err := o.F.signDecision(c.Context, cfg, dir, s.ID(), &d, w.Request); err != nil {
			return fmt.Errorf("sign the decision on %s: %w", w.Request.CallID, err)
		}
		ds = append(ds, session.Decision{ApprovalData: d, Note: o.Decision + " " + w.Request.Name + " " + agent.Summarize(w.Request.Args)})
	}
	if err := s.Decide(c.Context, ds...); err != nil {
		return err
	}
	verb := map[string]string{decisionAllow: "approved", decisionDeny: "denied", decisionAnswer: "answered"}[o.Decision]
	for _, w := range targets {
		fmt.Fprintf(o.F.IO.Err, "%s %s (%s)\n", verb, strings.TrimSpace(w.Request.Name+" "+agent.Summarize(w.Request.Args)), w.Request.CallID)
	}
	fmt.Fprintf(o.F.IO.Err, "decode resume %s continues the run\n", s.ID())
	return nil
}

// decisionTargets picks the requests a decision applies to, and its text
// (the reason or the answer). With no CALL it takes every undecided
// request of the decision's kind; a CALL may also change an earlier
// decision that no run has acted on yet.
func decisionTargets(pending []agent.Waiting, o *DecideOptions) ([]agent.Waiting, string, error) {
	kind := session.WaitApproval
	if o.Decision == decisionAnswer {
		kind = session.WaitQuestion
	}
	var open []agent.Waiting
	for _, w := range pending {
		if w.Request.Kind == kind {
			open = append(open, w)
		}
	}
	args := o.Args
	if len(args) > 0 {
		for _, w := range open {
			if w.Request.CallID == args[0] && (len(args) > 1 || o.Decision != decisionAnswer) {
				return []agent.Waiting{w}, strings.Join(args[1:], " "), nil
			}
		}
		if o.Decision == decisionAllow {
			return nil, "", usageErrorf("no call %s waits for approval%s", args[0], listCalls(open))
		}
	}
	var undecided []agent.Waiting
	for _, w := range open {
		if w.Decision == nil {
			undecided = append(undecided, w)
		}
	}
	what := map[string]string{session.WaitApproval: "approval", session.WaitQuestion: "an answer"}[kind]
	switch {
	case len(undecided) == 0:
		return nil, "", fmt.Errorf("nothing waits for %s%s", what, listWaits(pending))
	case o.Decision == decisionAnswer && len(undecided) > 1:
		return nil, "", usageErrorf("%d questions wait for an answer; name one: decode answer SESSION CALL TEXT%s", len(undecided), listCalls(undecided))
	}
	return undecided, strings.Join(args, " "), nil
}

func listCalls(ws []agent.Waiting) string {
	if len(ws) == 0 {
		return ""
	}
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.Request.CallID
	}
	return " (waiting: " + strings.Join(ids, ", ") + ")"
}

func listWaits(ws []agent.Waiting) string {
	var parts []string
	for _, w := range ws {
		if w.Decision == nil {
			parts = append(parts, agent.Describe(w.Request))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; it waits for: " + strings.Join(parts, "; ")
}

// decisionText is what decode log shows of an approval_request (what a
// paused run waits for: the call, its arguments, why) and of an approval.
func decisionText(e session.Entry) string {
	if e.Type == session.TypeApproval {
		var d session.ApprovalData
		_ = e.Decode(&d)
		switch d.Decision {
		case decisionAnswer:
			return fmt.Sprintf("✓ answered %s: %s", d.CallID, firstLineOf(d.Answer))
		case decisionDeny:
			return strings.TrimSuffix(fmt.Sprintf("✗ denied %s: %s", d.CallID, firstLineOf(d.Reason)), ": ")
		}
		return "✓ approved " + d.CallID
	}
	var r session.ApprovalRequestData
	_ = e.Decode(&r)
	switch r.Kind {
	case session.WaitQuestion:
		return fmt.Sprintf("⏸ waits for an answer (%s): %s", r.CallID, r.Question)
	case session.WaitTime:
		until := "?"
		if r.Until != nil {
			until = r.Until.Format(time.RFC3339)
		}
		return fmt.Sprintf("⏸ waits until %s (%s)", until, r.CallID)
	}
	text := fmt.Sprintf("⏸ waits for approval (%s): %s %s", r.CallID, r.Name, readableJSON(r.Args))
	if r.Reason != "" {
		text += "\n  why: " + r.Reason
	}
	return text
}

// readableJSON is raw JSON as a person reads it: without the \u003c,
// \u003e and \u0026 escapes Go's encoder puts in stored entries.
func readableJSON(raw json.RawMessage) string {
	if !bytes.Contains(raw, []byte(`\u00`)) {
		return string(raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimRight(b.String(), "\n")
}
