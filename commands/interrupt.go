package commands

import (
	"context"
	"fmt"
	"io"
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
	// prompting counts open approval prompts: a signal while one is open
	// cancels at once, since the person answered the question with Ctrl-C.
	prompting atomic.Int32
	// notices is where the stop notice goes when a run at a terminal set
	// it (its stderr writer, which clears the spinner's line first); nil
	// means the factory's stderr.
	notices atomic.Pointer[io.Writer]
}

// noticeTo sends the stop notice to w.
func (in *interrupts) noticeTo(w io.Writer) { in.notices.Store(&w) }

// noticeWriter is where the stop notice goes.
func (in *interrupts) noticeWriter(def io.Writer) io.Writer {
	if w := in.notices.Load(); w != nil {
		return *w
	}
	return def
}

// prompt marks an approval prompt open until the returned function runs.
func (in *interrupts) prompt() func() {
	in.prompting.Add(1)
	return func() { in.prompting.Add(-1) }
}

// claim makes the first signal a soft stop and returns the channel it
// closes.
func (in *interrupts) claim() <-chan struct{} {
	in.claimed.Store(true)
	return in.soft
}

// withSignals returns a context cancelled by the second signal (or the
// first, unless a loop claimed it through f.SoftStop and no approval prompt
// is open), and a function that stops listening.
func withSignals(parent context.Context, f *Factory) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{soft: make(chan struct{})}
	f.SoftStop = in.claim
	f.Prompting = in.prompt
	f.NoticeTo = in.noticeTo
	errw := f.IO.Err
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
		if in.claimed.Load() && in.prompting.Load() == 0 {
			fmt.Fprintln(in.noticeWriter(errw), "decode: stopping after the current step; interrupt again to stop now")
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
