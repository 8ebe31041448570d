package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"decode/agent"
	"decode/session"
)

// resumeDue is decode resume --due: it continues, oldest first, every
// paused session of the store that waits only for a time that has come
// (a long sleep), so that cron or a CI schedule drives recurring work.
func resumeDue(ctx context.Context, ro *ResumeOptions) error {
	if len(ro.Args) > 0 {
		return usageErrorf("--due continues every session whose time has come; it takes no SESSION or PROMPT")
	}
	if ro.Agent.OutputLastMessage != "" {
		return usageErrorf("--output-last-message with --due: several sessions may be continued; resume one session to keep its answer")
	}
	// Checked once here too: with no session due, a bad flag would pass unseen.
	if err := ro.Agent.checkFlags(); err != nil {
		return err
	}
	gst, err := openStore(ro.Agent.F, ro.Agent.Dir)
	if err != nil {
		return err
	}
	st := gst.Sessions()
	infos, err := st.List(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	var errs []error
	resumed := 0
	for _, in := range slices.Backward(infos) {
		if in.Status != session.StatusPaused {
			continue
		}
		s, err := st.Open(ctx, in.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !agent.Due(s.Entries(), now) {
			continue
		}
		resumed++
		o := *ro.Agent
		err = resumeRun(ctx, &ResumeOptions{Agent: &o, Args: []string{in.ID}})
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", in.ID, err))
		}
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			break // interrupted: leave the other sessions for the next --due
		}
	}
	if resumed == 0 {
		fmt.Fprintln(ro.Agent.F.IO.Err, "no session is due")
	}
	return errors.Join(errs...)
}
