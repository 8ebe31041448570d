package commands

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// terminal is what stderr gets beyond plain lines when it is a terminal:
// a spinner while the model is awaited, and colour unless NO_COLOR is set.
// TERM=dumb, a pipe or a file get neither, so CI logs stay plain.
type terminal struct {
	color   bool
	spin    bool
	spinner *spinner
}

func newTerminal(s *IOStreams, getenv func(string) string) terminal {
	if !s.ErrTTY || getenv("TERM") == "dumb" {
		return terminal{}
	}
	return terminal{spin: true, color: getenv("NO_COLOR") == "", spinner: &spinner{w: s.Err}}
}

// writer wraps stderr: each write first clears the spinner's line, and
// lines decode prints get their colour.
func (t terminal) writer(w io.Writer) io.Writer {
	return &termWriter{w: w, spin: t.spinner, color: t.color}
}

// spinnerFrames are drawn in turn, one every spinnerTick.
const spinnerFrames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

const spinnerTick = 100 * time.Millisecond

// spinner draws a frame, a label and the time elapsed on one line of the
// terminal, redrawn every tick until stopped, and clears the line when
// stopped or when something else is printed (termWriter).
type spinner struct {
	w       io.Writer
	mu      sync.Mutex
	label   string
	started time.Time
	frame   int
	drawn   bool
	// stop is closed to end the drawing goroutine, which closes done; both
	// are nil while the spinner is stopped.
	stop, done chan struct{}
}

// Start shows the spinner with label, timing from now.
func (s *spinner) Start(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.label, s.started = label, time.Now()
	if s.stop != nil {
		return
	}
	s.frame = 0
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.drawLocked()
	go s.loop(s.stop, s.done)
}

func (s *spinner) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(spinnerTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			if s.stop == stop { // not stopped while this tick waited for the lock
				s.frame++
				s.drawLocked()
			}
			s.mu.Unlock()
		}
	}
}

// Stop clears the spinner's line and ends its drawing. Stopping a stopped
// spinner does nothing.
func (s *spinner) Stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop, s.done = nil, nil
	s.clearLocked()
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (s *spinner) drawLocked() {
	frames := []rune(spinnerFrames)
	fmt.Fprintf(s.w, "\r\x1b[K%c %s %s", frames[s.frame%len(frames)], s.label, elapsed(time.Since(s.started)))
	s.drawn = true
}

func (s *spinner) clearLocked() {
	if s.drawn {
		io.WriteString(s.w, "\r\x1b[K")
		s.drawn = false
	}
}

// elapsed is a wait as the spinner shows it: 0.4s, 12.0s, 1m05s.
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// termWriter is stderr on a terminal.
type termWriter struct {
	w     io.Writer
	spin  *spinner
	color bool
}

func (t *termWriter) Write(p []byte) (int, error) {
	if t.spin != nil {
		t.spin.mu.Lock()
		defer t.spin.mu.Unlock()
		t.spin.clearLocked()
	}
	if !t.color {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, colorLine(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ANSI SGR codes of the colours decode uses.
const (
	sgrReset  = "\x1b[0m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
)

// colorLine colours one line of decode's stderr by what it says: a failed
// tool call red, warnings, retries and pauses yellow, the bullet of a tool
// call green, other notes dim. The newline stays outside the colour.
func colorLine(s string) string {
	body, nl := strings.CutSuffix(s, "\n")
	end := ""
	if nl {
		end = "\n"
	}
	switch {
	case strings.HasPrefix(body, "✗ "):
		return sgrRed + body + sgrReset + end
	case strings.HasPrefix(body, "decode: warning: "), strings.HasPrefix(body, "⏸ "),
		strings.HasPrefix(body, "decode: ") && strings.Contains(body, "; retrying"):
		return sgrYellow + body + sgrReset + end
	case strings.HasPrefix(body, "• "):
		return sgrGreen + "•" + sgrReset + strings.TrimPrefix(body, "•") + end
	case strings.HasPrefix(body, "decode: "):
		return sgrDim + body + sgrReset + end
	}
	return s
}
