package conformance

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixtureSetsLoad(t *testing.T) {
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		t.Run(p, func(t *testing.T) {
			fx := Load(t, filepath.Join("..", p, "testdata"))
			assert.Len(t, fx.cases(), 11, "every scenario")
		})
	}
}

func TestFirstHalf(t *testing.T) {
	assert.Equal(t, "data: 1\n\ndata: 2\n\n", string(firstHalf([]byte("data: 1\n\ndata: 2\n\ndata: 3\n\n"))), "rounded up")
	assert.Equal(t, "a\r\n\r\n", string(firstHalf([]byte("a\r\n\r\nb\r\n\r\n"))), "CRLF separators")
	assert.Equal(t, "data: 1\n\n", string(firstHalf([]byte("data: 1\n\n"))), "one event is kept whole")
	assert.Empty(t, firstHalf(nil))
}

func TestServerQueuesCountsAndResets(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.sse"), []byte("data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"), 0o644))
	srv := NewServer(t, dir, "/v1/x")
	srv.Queue(
		Reply{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: `{"error":"slow"}`},
		Reply{File: "s.sse", Trickle: true},
		Reply{File: "s.sse", Reset: true},
	)

	resp, err := http.Post(srv.URL+"/v1/x", "application/json", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	assert.JSONEq(t, `{"error":"slow"}`, string(body))

	resp, err = http.Post(srv.URL+"/v1/x", "application/json", nil)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n", string(body), "trickled whole")

	resp, err = http.Post(srv.URL+"/v1/x", "application/json", nil)
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Error(t, err, "the body breaks off")
	assert.Equal(t, "data: 1\n\ndata: 2\n\n", string(body), "half the events before the reset")

	assert.Len(t, srv.Requests(), 3, "counted on the server's side")
}

func TestSleepsRecordInsteadOfWaiting(t *testing.T) {
	var s Sleeps
	p := s.Policy()
	require.NoError(t, p.Sleep(context.Background(), time.Hour))
	assert.Equal(t, []time.Duration{time.Hour}, s.Durations())
	assert.Zero(t, p.Rand(), "no jitter: backoffs are exact")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, p.Sleep(ctx, time.Second), context.Canceled, "a cancelled wait still ends the retry")
}
