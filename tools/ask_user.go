package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"strings"
	"time"
)

//go:embed ask_user.md
var askUserDesc string

// Wait is what a call has to wait for before it can complete in a run that
// no one watches: a person's answer to Question, or the time Until. The
// loop records it and pauses the run instead of running the call.
type Wait struct {
	Question string
	Until    time.Time
}

// Asker puts a question to the person at the terminal and returns the answer.
type Asker func(ctx context.Context, question string) (string, error)

type askUserArgs struct {
	Question string `json:"question"`
}

// AskUser is the ask_user tool. With an Asker it asks at the terminal;
// without one (a headless run) the call pauses the run until the user
// answers with decode answer.
type AskUser struct {
	*funcTool[askUserArgs]
	ask Asker
}

// NewAskUser returns the ask_user tool; ask is nil when no one is at a terminal.
func NewAskUser(ask Asker) *AskUser {
	t := &AskUser{ask: ask}
	t.funcTool = newFuncTool("ask_user", askUserDesc, true, t.run)
	return t
}

func (t *AskUser) run(ctx context.Context, a askUserArgs) (Result, error) {
	q := strings.TrimSpace(a.Question)
	if q == "" {
		return errResult("ask_user: no question", "question is empty"), nil
	}
	if t.ask == nil {
		return errResult("ask_user: no one to ask", "no one is at a terminal to answer; go on with your best judgement and say what you assumed"), nil
	}
	answer, err := t.ask(ctx, q)
	if err != nil {
		return errResult("ask_user: no answer", "the question could not be asked: "+err.Error()), nil
	}
	if strings.TrimSpace(answer) == "" {
		return Result{Content: "(the user gave no answer)", Note: "ask_user: no answer"}, nil
	}
	return Result{Content: answer, Note: "ask_user: answered"}, nil
}

// Pause reports that a question must wait for the user when no one is at
// a terminal; invalid arguments never pause (the call reports them).
func (t *AskUser) Pause(raw json.RawMessage, _ time.Time) (Wait, bool) {
	if t.ask != nil {
		return Wait{}, false
	}
	a, err := decodeArgs[askUserArgs](t.args, raw)
	if err != nil || strings.TrimSpace(a.Question) == "" {
		return Wait{}, false
	}
	return Wait{Question: strings.TrimSpace(a.Question)}, true
}
