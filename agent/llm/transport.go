package llm

import (
	"context"
	"net"
	"net/http"
	"time"
)

// HTTPClient returns the client decode's adapters use: the default
// transport's settings, with connections that acknowledge received data at
// once. Servers that write a response in several small pieces (headers,
// then each event) otherwise wait on the client's delayed ACK (up to 40 ms
// on Linux) under Nagle's algorithm, which on a fast local server costs more
// than the whole answer.
func HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return quickAck(c), nil
	}
	return &http.Client{Transport: t}
}
