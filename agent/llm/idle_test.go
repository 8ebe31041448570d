package llm

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A slow but steady body is never cut: the idle clock restarts with each
// byte. A body that goes silent fails with an IdleError, a net.Error
// whose Timeout is true, which adapters classify as a network failure.
func TestIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for i := range 8 {
			if r.URL.Path == "/silent" && i == 2 {
				<-r.Context().Done()
				return
			}
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	}))
	defer srv.Close()
	c := WithIdleTimeout(HTTPClient(), 200*time.Millisecond)

	resp, err := c.Get(srv.URL + "/steady")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err, "480 ms of body, never 200 ms without a byte")
	assert.Equal(t, "xxxxxxxx", string(body))

	resp, err = c.Get(srv.URL + "/silent")
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	var idle *IdleError
	require.ErrorAs(t, err, &idle)
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout())
	assert.Contains(t, err.Error(), "no data from the provider for 200ms")
}
