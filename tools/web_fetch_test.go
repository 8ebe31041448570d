package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fetchServer serves the pages the web_fetch tests need on 127.0.0.1.
func fetchServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			fmt.Fprint(w, body)
		})
	}
	page("/page", "text/html; charset=utf-8", `<html><head><title>T</title><style>p{}</style><script>alert(1)</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/docs/a">a link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre><code>x := 1</code></pre>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></body></html>`)
	page("/plain.txt", "text/plain; charset=utf-8", "just text\nline two\n")
	page("/data.json", "application/json", `{"a": [1, 2, 3]}`)
	page("/problem.json", "application/problem+json", `{"title": "x"}`)
	page("/latin1", "text/plain; charset=iso-8859-1", "caf\xe9")
	page("/latin1-meta", "text/html", "<html><head><meta charset=\"iso-8859-1\"></head><body><p>na\xefve</p></body></html>")
	page("/untyped", "", "no content type here")
	page("/image.png", "image/png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	page("/octets", "application/octet-stream", "\x00\x01\x02\x03binary")
	page("/nul.txt", "text/plain", "looks like text\x00but is not")
	page("/pdf", "application/pdf", "%PDF-1.7\n...")
	page("/empty", "text/html", "<html><body></body></html>")
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 20000 {
			fmt.Fprintf(w, "line %05d %s\n", i, strings.Repeat("é", 20))
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<p>no such page</p>")
	})
	mux.HandleFunc("/agent", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ua=%s accept=%s", r.Header.Get("User-Agent"), r.Header.Get("Accept"))
	})
	mux.HandleFunc("/hop/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hop/"), "%d", &n)
		if n == 0 {
			http.Redirect(w, r, "/plain.txt", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusMovedPermanently)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, tool Tool, url string) Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"url": url})
	require.NoError(t, err)
	res, err := tool.Run(context.Background(), args)
	require.NoError(t, err, "a failed fetch is a tool result, not an error")
	return res
}

func TestWebFetchConverts(t *testing.T) {
	srv := fetchServer(t)
	tool := NewWebFetch(WebFetchOptions{})
	assert.True(t, tool.ReadOnly())
	assert.Equal(t, "web_fetch", tool.Spec().Name)

	res := fetch(t, tool, srv.URL+"/page")
	require.False(t, res.IsError, res.Content)
	for _, want := range []string{"# Hello", "Some **bold** text", "[a link](" + srv.URL + "/docs/a)", "- one", "x := 1", "| k | v |"} {
		assert.Contains(t, res.Content, want, "HTML becomes Markdown with absolute links")
	}
	assert.NotContains(t, res.Content, "alert(1)", "scripts are dropped")
	assert.NotContains(t, res.Content, "<p>")
	assert.Contains(t, res.Note, "html→markdown")

	cases := map[string]string{
		"/plain.txt":    "just text\nline two",
		"/data.json":    `{"a": [1, 2, 3]}`,
		"/problem.json": `{"title": "x"}`,
		"/latin1":       "café",
		"/untyped":      "no content type here",
	}
	for path, want := range cases {
		res := fetch(t, tool, srv.URL+path)
		assert.False(t, res.IsError, "%s: %s", path, res.Content)
		assert.Equal(t, want, res.Content, "%s passes through as text", path)
	}
	res = fetch(t, tool, srv.URL+"/latin1-meta")
	assert.Contains(t, res.Content, "naïve", "a charset declared in the page is honoured")
	res = fetch(t, tool, srv.URL+"/empty")
	assert.Equal(t, "(the page has no text)", res.Content)
	res = fetch(t, tool, srv.URL+"/agent")
	assert.Contains(t, res.Content, "ua=decode")
	assert.Contains(t, res.Content, "text/markdown", "servers that can send Markdown are asked to")
}

func TestWebFetchRefuses(t *testing.T) {
	srv := fetchServer(t)
	tool := NewWebFetch(WebFetchOptions{})
	for _, path := range []string{"/image.png", "/octets", "/nul.txt", "/pdf"} {
		res := fetch(t, tool, srv.URL+path)
		assert.True(t, res.IsError, path)
		assert.Contains(t, res.Content, "not text", path)
	}
	for _, url := range []string{"file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "127.0.0.1/x", "https:///x", " " + srv.URL} {
		res := fetch(t, tool, url)
		assert.True(t, res.IsError, url)
		assert.Contains(t, res.Note, "bad url", url)
	}
	res := fetch(t, tool, srv.URL+"/missing")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "HTTP 404")
	assert.Contains(t, res.Content, "no such page", "the error page is shown, converted")

	res, err := tool.Run(context.Background(), json.RawMessage(`{"url": 42}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, `"url"`, "bad arguments name the field")
	res, err = tool.Run(context.Background(), json.RawMessage(`{"url": "http://x", "method": "POST"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Content, `unknown field "method"`)
}

func TestWebFetchCaps(t *testing.T) {
	srv := fetchServer(t)
	tool := NewWebFetch(WebFetchOptions{MaxRead: 200 << 10, MaxOutput: 10 << 10})
	res := fetch(t, tool, srv.URL+"/big")
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "only the first 204800 were read", "the size cap is noted")
	assert.LessOrEqual(t, len(res.Content), 11<<10, "output is capped")
	assert.True(t, strings.HasPrefix(res.Content, "[the page is larger"), res.Content[:80])
	assert.Contains(t, res.Content, "line 00000")
	i := strings.LastIndex(res.Content, "offset ")
	require.Positive(t, i, "the note says how to read on")
	var next int
	_, err := fmt.Sscanf(res.Content[i:], "offset %d", &next)
	require.NoError(t, err)

	args, _ := json.Marshal(map[string]any{"url": srv.URL + "/big", "offset": next})
	more, err := tool.Run(context.Background(), args)
	require.NoError(t, err)
	require.False(t, more.IsError, more.Content)
	assert.Contains(t, more.Content, fmt.Sprintf("[from byte %d of", next))
	lastShown := res.Content[strings.LastIndex(res.Content[:i], "line "):]
	lastShown = lastShown[:len("line 00000")]
	var n int
	fmt.Sscanf(lastShown, "line %d", &n)
	assert.Contains(t, more.Content, fmt.Sprintf("\nline %05d ", n+1), "the next call goes on where the cut was, at a line break")

	args, _ = json.Marshal(map[string]any{"url": srv.URL + "/plain.txt", "offset": 1 << 20})
	past, err := tool.Run(context.Background(), args)
	require.NoError(t, err)
	assert.True(t, past.IsError, "an offset past the end is an error the model can correct")
}

func TestWebFetchTimeout(t *testing.T) {
	srv := fetchServer(t)
	tool := NewWebFetch(WebFetchOptions{Timeout: 50 * time.Millisecond})
	res := fetch(t, tool, srv.URL+"/slow")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Note, "timed out")
	assert.Contains(t, res.Content, "50ms")
}

func TestWebFetchRedirects(t *testing.T) {
	srv := fetchServer(t)
	tool := NewWebFetch(WebFetchOptions{})
	res := fetch(t, tool, srv.URL+"/hop/2")
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "[redirected to "+srv.URL+"/plain.txt]")
	assert.Contains(t, res.Content, "just text")

	res = fetch(t, tool, srv.URL+"/hop/9")
	assert.False(t, res.IsError, "a redirect not followed is a result, not a failure")
	assert.Contains(t, res.Content, "more than 5 redirects")

	// Another host (localhost is not 127.0.0.1) is not followed: the gate
	// approved 127.0.0.1, not where it sends the request on to.
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	away := httptest.NewServer(http.RedirectHandler(other+"/plain.txt", http.StatusFound))
	defer away.Close()
	res = fetch(t, tool, away.URL)
	assert.False(t, res.IsError)
	assert.Contains(t, res.Content, "redirects to "+other+"/plain.txt")
	assert.Contains(t, res.Content, "Call web_fetch with that URL")
	assert.NotContains(t, res.Content, "just text")

	down := httptest.NewTLSServer(http.RedirectHandler(srv.URL+"/plain.txt", http.StatusFound))
	defer down.Close()
	res = fetch(t, NewWebFetch(WebFetchOptions{Client: down.Client()}), down.URL)
	assert.Contains(t, res.Content, "not followed", "a hop from https to http (here on another port) is not followed")

	scheme := httptest.NewServer(http.RedirectHandler("file:///etc/passwd", http.StatusFound))
	defer scheme.Close()
	res = fetch(t, tool, scheme.URL)
	assert.Contains(t, res.Content, "not an http(s) URL", "a redirect off http(s) is not followed")
}

func TestWebFetchSpecIsSmall(t *testing.T) {
	b, err := json.Marshal(NewWebFetch(WebFetchOptions{}).Spec())
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 600, "the web_fetch spec in bytes: %s", b)
}

// panicTransport stands for a bug deep in the fetch machinery.
type panicTransport struct{}

func (panicTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("transport exploded") }

func TestWebFetchPanicIsToolError(t *testing.T) {
	tool := NewWebFetch(WebFetchOptions{Client: &http.Client{Transport: panicTransport{}}})
	res := fetch(t, tool, "http://127.0.0.1:1/x")
	assert.True(t, res.IsError, "a panic becomes a tool error the run goes on after")
	assert.Contains(t, res.Content, "transport exploded")
}
