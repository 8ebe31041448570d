package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Decisions on an approval_request, as approval entries record them.
const (
	DecisionAllow  = "allow"  // decode approve: run the call
	DecisionDeny   = "deny"   // decode deny: refuse it, with a reason
	DecisionAnswer = "answer" // decode answer: the answer to ask_user
)

// Decision is a person's decision on one request a paused session waits
// for: the approval entry's data (signed by the caller) and the short
// summary its commit message carries ("allow bash go test ./...").
type Decision struct {
	ApprovalData
	Note string
}

// Decide records decisions (decode approve, deny, answer) as approval
// entries, in one commit. Each must name an approval_request of the
// session by its call id and hash, with a decision that fits the request's
// kind (an answer for a question, allow or deny for an approval); nothing
// is written when one does not. The caller holds the session's lock.
func (s *Session) Decide(ctx context.Context, ds ...Decision) error {
	es, err := decisionEntries(s.id, s.entries, ds)
	if err != nil {
		return err
	}
	return s.Append(ctx, es...)
}

// decisionEntries checks ds against the entries of session id and returns
// their approval entries.
func decisionEntries(id string, entries []Entry, ds []Decision) ([]Entry, error) {
	if len(ds) == 0 {
		return nil, errors.New("no decision to record")
	}
	es := make([]Entry, 0, len(ds))
	for _, d := range ds {
		if err := checkDecision(entries, d.ApprovalData); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		es = append(es, NewEntry(TypeApproval, d.ApprovalData, d.Note))
	}
	return es, nil
}

// checkDecision finds the request d decides among es and checks that d
// fits it.
func checkDecision(es []Entry, d ApprovalData) error {
	i := slices.IndexFunc(es, func(e Entry) bool {
		if e.Type != TypeApprovalReq {
			return false
		}
		var r ApprovalRequestData
		return e.Decode(&r) == nil && r.CallID == d.CallID
	})
	if i < 0 {
		return fmt.Errorf("no call %s waits for a decision", d.CallID)
	}
	var r ApprovalRequestData
	_ = es[i].Decode(&r)
	if r.Hash != d.Hash {
		return fmt.Errorf("the decision on %s is bound to another call (hash %.12s, the request's is %.12s)", d.CallID, d.Hash, r.Hash)
	}
	switch {
	case r.Kind == WaitQuestion && d.Decision != DecisionAnswer:
		return fmt.Errorf("call %s asks a question: it takes an answer, not %q", d.CallID, d.Decision)
	case r.Kind == WaitApproval && d.Decision != DecisionAllow && d.Decision != DecisionDeny:
		return fmt.Errorf("call %s waits for approval: it takes allow or deny, not %q", d.CallID, d.Decision)
	case r.Kind != WaitQuestion && r.Kind != WaitApproval:
		return fmt.Errorf("call %s waits for %s, which no decision ends", d.CallID, r.Kind)
	}
	return nil
}
