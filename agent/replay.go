package agent

import (
	"context"
	"fmt"

	"decode/session"
)

// Replay runs the prompts of a session's user entries again, one turn
// after another, each to the end of its turn. The first prompt is in the
// session already (a replay branches the source at it), so the first turn
// only answers it. A turn that pauses or fails ends the replay.
type Replay struct {
	// Prompts are the source session's user entries.
	Prompts []session.Entry
}

// Turns implements Driver.
func (r Replay) Turns(ctx context.Context, opts Options, p Progress, _ string) (Outcome, error) {
	var total Outcome
	for i, e := range r.Prompts {
		prompt := ""
		if i > 0 {
			p.turn()
			var d session.UserData
			if err := e.Decode(&d); err != nil {
				return total, fmt.Errorf("replay: entry %d: %w", e.ID, err)
			}
			prompt = d.Text
			opts.Attach = NewAttached(d.Attachments) // the images it was sent with
		}
		out, err := Run(ctx, opts, prompt)
		opts.Respec = nil // recorded with the first turn
		total = total.Add(out)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
