package openai

import (
	"bufio"
	"bytes"
	"decode/agent/llm"
	"io"
	"net/http"
	"strings"
	"time"
)

// callDoer is the HTTP client the SDK uses for one Stream call. go-openai
// hides the response headers of a failed request (it returns only an
// *APIError or *RequestError), so the doer keeps the headers of the last
// response itself; Retry-After is read from them when the call fails. A new
// doer is made per call, so concurrent calls never share it.
//
// It also removes SSE comment lines (": keep-alive", OpenRouter's
// ": OPENROUTER PROCESSING") from event streams before the SDK reads them:
// go-openai collects such lines in its error buffer, and a later error event
// then fails to decode and surfaces as a JSON syntax error instead of the
// provider's error.
type callDoer struct {
	client *http.Client
	header http.Header
}

// Do sends req and remembers the response headers.
func (d *callDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return resp, err
	}
	d.header = resp.Header
	contentType := strings.ToLower(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(contentType, "text/event-stream") {
		resp.Body = &commentFilter{r: bufio.NewReader(resp.Body), body: resp.Body, lineStart: true}
	}
	return resp, nil
}

// retryAfter returns the delay the last response asked for, or 0.
func (d *callDoer) retryAfter(now time.Time) time.Duration {
	if d.header == nil {
		return 0
	}
	return llm.RetryAfter(d.header, now)
}

// commentFilter passes an SSE body through without its comment lines (lines
// starting with ':'). It works line by line, as SSE is line-oriented, so it
// adds no latency to the stream.
type commentFilter struct {
	r         *bufio.Reader
	body      io.Closer
	pending   []byte // the rest of the current line, not yet read
	err       error  // the read error to report once pending is drained
	lineStart bool   // the next byte read starts a line
	skipping  bool   // inside a comment line that did not fit the buffer
}

func (f *commentFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		chunk, err := f.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil // a long line: keep going, it continues in the next slice
		}
		f.err = err
		complete := bytes.HasSuffix(chunk, []byte("\n"))
		drop := f.skipping || (f.lineStart && len(chunk) > 0 && chunk[0] == ':')
		f.skipping = drop && !complete
		if len(chunk) > 0 {
			f.lineStart = complete
		}
		if !drop {
			// chunk points into the bufio buffer; it stays valid until the
			// next ReadSlice, which only happens once pending is drained.
			f.pending = chunk
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *commentFilter) Close() error { return f.body.Close() }
