package gemini

import (
	"context"
	"io"
	"net/http"
)

// wire records what genai does not pass on about one request: the
// response's headers (Retry-After) and the error that cut its body.
type wire struct {
	header  http.Header
	readErr error
}

type wireKey struct{}

// withWire returns a context under which tap records into w. The record is
// optional: a request without one is sent unchanged.
func withWire(ctx context.Context, w *wire) context.Context {
	return context.WithValue(ctx, wireKey{}, w)
}

// tap is the transport under genai. It hands genai a body whose read errors
// end the stream as a clean EOF, recording the error instead: genai logs
// body errors through the global log package (on the user's stderr), and
// the adapter reports a stream that ended early itself.
type tap struct {
	base http.RoundTripper
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	w, _ := req.Context().Value(wireKey{}).(*wire)
	if err != nil || w == nil {
		return resp, err
	}
	w.header = resp.Header
	resp.Body = &quietBody{rc: resp.Body, w: w}
	return resp, nil
}

// quietBody turns read errors into io.EOF after recording them.
type quietBody struct {
	rc io.ReadCloser
	w  *wire
}

func (b *quietBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		if b.w.readErr == nil {
			b.w.readErr = err
		}
		err = io.EOF
	}
	return n, err
}

// Close never fails: genai logs a failed close, and there is nothing to do
// about one.
func (b *quietBody) Close() error {
	_ = b.rc.Close()
	return nil
}

// tapClient returns a copy of hc (or of a plain client) whose transport is
// wrapped by tap; the caller's client is left unchanged.
func tapClient(hc *http.Client) *http.Client {
	c := http.Client{}
	if hc != nil {
		c = *hc
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &tap{base: base}
	return &c
}
