package commands

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupts is decode's two-stage answer to SIGINT and SIGTERM. The first
// signal asks a running agent loop to stop at its next step boundary and
// save; a command with no loop is cancelled at once. The second signal
// cancels everything: the model stream, and the running command's process
// group (the bash tool kills it when its context ends).
type interrupts struct {
	soft    chan struct{}
	claimed atomic.Bool
}

// claim makes the first signal a soft stop and returns the channel it
// closes.
func (in *interrupts) claim() <-chan struct{} {
	in.claimed.Store(true)
	return in.soft
}

// withSignals returns a context cancelled by the second signal (or the
// first, unless a loop claimed it through f.SoftStop), and a function that
// stops listening.
func withSignals(parent context.Context, f *Factory) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{soft: make(chan struct{})}
	f.SoftStop = in.claim
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		close(in.soft)
		if in.claimed.Load() {
			fmt.Fprintln(f.IO.Err, "decode: stopping after the current step; interrupt again to stop now")
			select {
			case <-sigs:
			case <-done:
				return
			}
		}
		cancel()
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
