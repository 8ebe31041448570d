package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"
)

//go:embed sleep.md
var sleepDesc string

// MaxHeadlessSleep is the longest sleep a headless run waits for in
// process; a longer one pauses the run until its time (exit 3).
const MaxHeadlessSleep = 5 * time.Second

// maxSleep caps one sleep: a month is far beyond any sensible poll.
const maxSleep = 31 * 24 * time.Hour

type sleepArgs struct {
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason,omitempty"`
}

// Sleep is the sleep tool.
type Sleep struct {
	*funcTool[sleepArgs]
}

// NewSleep returns the sleep tool.
func NewSleep() *Sleep {
	t := &Sleep{}
	t.funcTool = newFuncTool("sleep", sleepDesc, true, t.run)
	return t
}

func sleepFor(a sleepArgs) (time.Duration, string) {
	switch {
	case a.Seconds < 0:
		return 0, "seconds must not be negative"
	case a.Seconds > maxSleep.Seconds():
		return 0, fmt.Sprintf("seconds must be at most %d (31 days)", int(maxSleep.Seconds()))
	}
	return time.Duration(a.Seconds * float64(time.Second)), ""
}

func (t *Sleep) run(ctx context.Context, a sleepArgs) (Result, error) {
	d, msg := sleepFor(a)
	if msg != "" {
		return errResult("sleep: bad arguments", msg), nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return errResult("sleep: interrupted", "the wait was interrupted"), nil
	case <-timer.C:
	}
	return Result{Content: fmt.Sprintf("waited %s", d), Note: fmt.Sprintf("sleep %s", d)}, nil
}

// Pause reports that a sleep longer than MaxHeadlessSleep must wait until
// now plus its duration in a headless run.
func (t *Sleep) Pause(raw json.RawMessage, now time.Time) (Wait, bool) {
	a, err := decodeArgs[sleepArgs](t.args, raw)
	if err != nil {
		return Wait{}, false
	}
	d, msg := sleepFor(a)
	if msg != "" || d <= MaxHeadlessSleep {
		return Wait{}, false
	}
	return Wait{Until: now.Add(d)}, true
}
