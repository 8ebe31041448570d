package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHostRule(t *testing.T) {
	for in, want := range map[string]HostRule{
		"Example.com":       {Host: "example.com"},
		"example.com:8443":  {Host: "example.com", Port: "8443"},
		"*.example.com":     {Host: "*.example.com"},
		"127.0.0.1:9":       {Host: "127.0.0.1", Port: "9"},
		"[::1]:80":          {Host: "::1", Port: "80"},
		"[::1]":             {Host: "::1"},
		"*.github.com:443":  {Host: "*.github.com", Port: "443"},
		"proxy.golang.org.": {Host: "proxy.golang.org"},
	} {
		got, err := ParseHostRule(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "https://example.com", "example.com/x", "ex*ample.com", "*", "*.", "a:0", "a:http", "user@host"} {
		_, err := ParseHostRule(bad)
		assert.Error(t, err, bad)
	}
}

func TestProxyAllowed(t *testing.T) {
	var rules []HostRule
	for _, s := range []string{"example.com", "*.github.com", "127.0.0.1:8080", "go.dev:443"} {
		r, err := ParseHostRule(s)
		require.NoError(t, err)
		rules = append(rules, r)
	}
	p := &Proxy{rules: rules}
	for hp, want := range map[string]bool{
		"example.com:443": true, "EXAMPLE.com.:80": true, "www.example.com:443": false,
		"api.github.com:443": true, "github.com:443": false, "evilgithub.com:443": false,
		"127.0.0.1:8080": true, "127.0.0.1:8081": false, "127.0.0.2:8080": false, "[::1]:8080": false,
		"go.dev:443": true, "go.dev:80": false, "93.184.216.34:443": false,
	} {
		h, port, err := net.SplitHostPort(hp)
		require.NoError(t, err)
		assert.Equal(t, want, p.Allowed(h, port), hp)
	}
}

// upstream is a fake web server on 127.0.0.1, outside any namespace.
func upstream(t *testing.T, body string) (*httptest.Server, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	t.Cleanup(srv.Close)
	return srv, strings.TrimPrefix(srv.URL, "http://")
}

func TestProxyOutsideSandbox(t *testing.T) {
	_, allowed := upstream(t, "hello from upstream")
	_, other := upstream(t, "must not be seen")
	rule, err := ParseHostRule(allowed)
	require.NoError(t, err)
	p, err := StartProxy([]HostRule{rule})
	require.NoError(t, err)
	defer p.Close()
	client := &http.Client{Transport: &http.Transport{
		Proxy:       func(*http.Request) (*urlT, error) { return mustURL("http://proxy"), nil },
		DialContext: unixDial(p.Socket),
	}}
	resp, err := client.Get("http://" + allowed + "/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from upstream", string(b))
	resp, err = client.Get("http://" + other + "/")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	host, _, _ := net.SplitHostPort(other)
	assert.Contains(t, string(b), "the network is closed to "+host+"; run with --allow-net "+host)
}

// TestProxyFromInsideSandbox runs curl in the sandbox: the named host is
// reached through the proxy (plain HTTP and CONNECT), another port is
// refused with 403, and a direct connection still fails.
func TestProxyFromInsideSandbox(t *testing.T) {
	r := probe(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	ws, _ := workspace(t)
	_, allowed := upstream(t, "hello from upstream")
	_, other := upstream(t, "must not be seen")
	rule, err := ParseHostRule(allowed)
	require.NoError(t, err)
	p, err := StartProxy([]HostRule{rule})
	require.NoError(t, err)
	defer p.Close()
	spec := editSpec(t, r.Layers, ws)
	spec.ProxySocket = p.Socket
	// NO_PROXY names 127.0.0.1, which the fake upstream is: clear it.
	out, code := run(t, spec, fmt.Sprintf(`export NO_PROXY= no_proxy=; echo "proxy=$HTTP_PROXY"
curl -sS -m 5 http://%[1]s/; echo " plain=$?"
curl -sS -m 5 -p http://%[1]s/; echo " tunnel=$?"
curl -sS -m 5 http://%[2]s/; echo " refused=$?"
curl -sS -m 5 -o /dev/null -w '%%{http_code}' -p http://%[2]s/; echo " refusedtunnel=$?"
curl -sS -m 2 --noproxy '*' http://%[1]s/; echo " direct=$?"`, allowed, other))
	t.Log(out)
	require.Equal(t, 0, code)
	assert.Regexp(t, `proxy=http://127\.0\.0\.1:\d+`, out)
	assert.Contains(t, out, "hello from upstream plain=0")
	assert.Contains(t, out, "hello from upstream tunnel=0")
	host, _, _ := net.SplitHostPort(other)
	assert.Contains(t, out, "decode sandbox: the network is closed to "+host+"; run with --allow-net "+host)
	assert.Contains(t, out, "403")
	assert.NotContains(t, out, "must not be seen")
	assert.NotContains(t, out, "direct=0")
}

type urlT = url.URL

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func unixDial(socket string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
}

// TestProxyMatchesNamesFromInsideSandbox names hosts, not addresses: a
// made-up name the proxy maps to the fake server is reached from the
// sandbox, through a wildcard too, while the address itself, not named,
// is refused.
func TestProxyMatchesNamesFromInsideSandbox(t *testing.T) {
	r := probe(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	ws, _ := workspace(t)
	_, up := upstream(t, "hello by name")
	_, port, _ := net.SplitHostPort(up)
	var rules []HostRule
	for _, s := range []string{"upstream.test", "*.example.test:" + port} {
		r, err := ParseHostRule(s)
		require.NoError(t, err)
		rules = append(rules, r)
	}
	p, err := StartProxy(rules)
	require.NoError(t, err)
	defer p.Close()
	p.resolve = func(string) string { return up }
	spec := editSpec(t, r.Layers, ws)
	spec.ProxySocket = p.Socket
	out, _ := run(t, spec, fmt.Sprintf(`export NO_PROXY= no_proxy=
curl -sS -m 5 http://upstream.test:%[1]s/; echo " name=$?"
curl -sS -m 5 -p http://api.example.test:%[1]s/; echo " wildcard=$?"
curl -sS -m 5 http://example.test:%[1]s/; echo " bare=$?"
curl -sS -m 5 http://%[2]s/; echo " address=$?"`, port, up))
	t.Log(out)
	assert.Contains(t, out, "hello by name name=0")
	assert.Contains(t, out, "hello by name wildcard=0")
	assert.Contains(t, out, "the network is closed to example.test;")
	assert.Contains(t, out, "the network is closed to 127.0.0.1;")
}
