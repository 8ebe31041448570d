package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxMessage bounds one JSON-RPC message read from a server (a stdio line
// or an HTTP body or event): a server that floods its output or never ends
// a line makes its connection fail instead of growing decode's memory.
const maxMessage = 8 << 20

// stopGrace is how long a stdio server has to exit after its stdin closes
// before its process group is killed.
const stopGrace = time.Second

// stdioTransport starts a server command in a process group of its own and
// speaks newline-delimited JSON over its stdin and stdout, at most
// maxMessage bytes a message. Its stderr is kept, last part only, for
// error messages.
type stdioTransport struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	proc   *process
}

func newStdioTransport(cmd *exec.Cmd) *stdioTransport {
	t := &stdioTransport{cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = t.stderr
	setProcessGroup(cmd)
	return t
}

// Connect starts the command.
func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	t.proc = &process{cmd: t.cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		t.proc.err = t.cmd.Wait()
		close(t.proc.done)
	}()
	io := &sdk.IOTransport{Reader: stdout, Writer: t.proc, MaxLineLength: maxMessage}
	return io.Connect(ctx)
}

// stop ends the server: stdin closed, a grace period, then its whole
// process group killed (a server started through npx or a shell leaves
// children behind otherwise).
func (t *stdioTransport) stop() {
	if t.proc != nil {
		t.proc.Close()
	}
}

// process is the server's stdin; closing it stops the server.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
	once  sync.Once
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *process) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			killGroup(p.cmd, false)
			select {
			case <-p.done:
			case <-time.After(stopGrace):
			}
		}
		// The leader is gone; whatever it started is killed with its group.
		killGroup(p.cmd, true)
	})
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.TrimSpace(string(b))
}

// httpTransport adds the configured headers to every request and bounds
// the bodies read back.
type httpTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: maxMessage}
	return resp, nil
}

// errTooLarge is a server's message past maxMessage.
var errTooLarge = fmt.Errorf("the server sent a message larger than %d MB; decode stopped reading it", maxMessage>>20)

// limitedBody fails a read once more than left bytes came. An SSE stream
// carries many messages, so the budget counts from the last event's end
// (a blank line).
type limitedBody struct {
	rc   io.ReadCloser
	left int
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= n
	if i := strings.LastIndex(string(p[:n]), "\n\n"); i >= 0 {
		b.left = maxMessage - (n - i - 2)
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
