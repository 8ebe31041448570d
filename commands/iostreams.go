package commands

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// IOStreams are a command's standard streams and what is known about them.
// Tests use buffers and may pretend to be a terminal.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// InPiped is true when stdin is a pipe or a regular file, the only
	// cases in which decode reads it, so nothing ever hangs waiting on a tty.
	InPiped bool
	// OutTTY is true when stdout is a terminal: the answer is streamed there
	// with the text written before tool calls. Otherwise stdout gets only
	// the final answer and that narration goes to stderr.
	OutTTY bool
	// ErrTTY is true when stderr is a terminal (spinners, colour).
	ErrTTY bool
	// TTY opens the controlling terminal for approval prompts; nil when
	// there is none.
	TTY func() (io.ReadWriteCloser, error)
}

// SystemIO returns the process's streams.
func SystemIO() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	if fi, err := os.Stdin.Stat(); err == nil {
		m := fi.Mode()
		s.InPiped = m&os.ModeNamedPipe != 0 || m.IsRegular()
	}
	s.OutTTY = isatty.IsTerminal(os.Stdout.Fd())
	s.ErrTTY = isatty.IsTerminal(os.Stderr.Fd())
	if isatty.IsTerminal(os.Stdin.Fd()) || s.ErrTTY {
		s.TTY = func() (io.ReadWriteCloser, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }
	}
	return s
}
