package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"decode/agent/llm"
	"decode/session"
)

// ErrPaused is returned when a headless run stopped to wait for an
// approval, an answer or a time; decode resume continues it from there.
var ErrPaused = errors.New("paused")

// PausedError says what a paused run waits for.
type PausedError struct {
	Waits []session.ApprovalRequestData
}

func (e *PausedError) Error() string {
	parts := make([]string, len(e.Waits))
	for i, w := range e.Waits {
		parts[i] = Describe(w)
	}
	return "paused: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrPaused) true.
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// Describe says in one line what a request waits for.
func Describe(r session.ApprovalRequestData) string {
	call := strings.TrimSpace(r.Name + " " + Summarize(r.Args))
	switch r.Kind {
	case session.WaitQuestion:
		return fmt.Sprintf("%s asks %q", r.Name, clip(r.Question, 120))
	case session.WaitTime:
		if r.Until != nil {
			return fmt.Sprintf("%s waits until %s", call, r.Until.Local().Format(time.RFC3339))
		}
		return call + " waits"
	}
	if r.Reason != "" {
		return call + " needs approval: " + r.Reason
	}
	return call + " needs approval"
}

// CallHash binds an approval to one exact call: the sha256 of the tool
// name and its arguments in canonical JSON (keys sorted, no spaces), so
// the same call hashes the same on any machine.
func CallHash(name string, args json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(canonicalJSON(args))
	return hex.EncodeToString(h.Sum(nil))
}

func canonicalJSON(raw json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return bytes.TrimSpace(raw) // invalid JSON: hash its bytes
	}
	out, err := json.Marshal(v)
	if err != nil {
		return bytes.TrimSpace(raw)
	}
	return out
}

// Waiting is one thing a paused session waits for, with the decision
// recorded for it so far (nil when undecided).
type Waiting struct {
	Request  session.ApprovalRequestData
	Decision *session.ApprovalData
}

// Pending lists what the session's last model response still waits for,
// in call order: approval requests whose calls have no result yet.
func Pending(entries []session.Entry) []Waiting {
	_, t := history(entries, "")
	if t == nil {
		return nil
	}
	var out []Waiting
	for _, c := range t.calls {
		r, ok := t.requests[c.ID]
		if _, done := t.results[c.ID]; !ok || done {
			continue
		}
		if _, started := t.started[c.ID]; started {
			continue
		}
		w := Waiting{Request: r}
		if d, ok := t.answers[c.ID]; ok {
			w.Decision = &d
		}
		out = append(out, w)
	}
	return out
}

// Due reports whether a paused session waits only for times that have
// come by now (decode resume --due).
func Due(entries []session.Entry, now time.Time) bool {
	timed := false
	for _, w := range Pending(entries) {
		if w.Decision != nil {
			continue
		}
		if w.Request.Kind != session.WaitTime || w.Request.Until == nil || w.Request.Until.After(now) {
			return false
		}
		timed = true
	}
	return timed
}

// Resumable reports whether a session has work to continue without a new
// prompt: a model response whose calls are not all answered (paused or
// interrupted), or a conversation whose last message awaits the model.
func Resumable(entries []session.Entry) bool {
	msgs, t := history(entries, "")
	return t != nil || awaitsModel(msgs)
}

func awaitsModel(msgs []llm.Message) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Role != llm.RoleAssistant
}

// checkDecisions refuses to continue when a decision does not belong to the
// call it would release: the request, its decision and the call in the
// session must all carry the same hash.
//
// verify, when set, then authenticates each decision (its MAC or
// signature); a decision it refuses stops the resume, naming the call.
func checkDecisions(t *turn, verify func(session.ApprovalData, llm.ToolCall) error) error {
	for _, c := range t.calls {
		d, decided := t.answers[c.ID]
		r, requested := t.requests[c.ID]
		if !decided || !requested {
			continue
		}
		if h := CallHash(c.Name, c.Args); r.Hash != h || d.Hash != h {
			return fmt.Errorf("the %s decision for call %s (%s) was made for a different call than the one waiting in the session; nothing was run", d.Decision, c.ID, c.Name)
		}
		if verify != nil {
			if err := verify(d, c); err != nil {
				return fmt.Errorf("the %s decision for call %s (%s) is refused: %w; nothing was run", d.Decision, c.ID, c.Name, err)
			}
		}
	}
	return nil
}
