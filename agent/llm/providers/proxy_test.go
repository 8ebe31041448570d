package providers

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/agent/llm/conformance"
)

// proxied builds p's model the way a worker with DECODE_PROXY does: no key
// at all, every request over the proxy's Unix socket; the proxy holds the
// key and forwards to the suite's server.
func proxied(p Provider) func(t *testing.T, base, model string) llm.Model {
	return func(t *testing.T, base, model string) llm.Model {
		if p.Adapter() == "openai" {
			base += "/v1"
		}
		sock := filepath.Join(shortTempDir(t), "proxy.sock")
		l, err := net.Listen("unix", sock)
		require.NoError(t, err)
		srv := &http.Server{Handler: Proxy(map[string]ProxyUpstream{p.Name: {Provider: p, Base: base, Key: "test-key-" + p.Name}}, "")}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		c, err := Resolve(p.Name+":"+model, func(string) string { return "" }, map[string]Settings{p.Name: {Proxy: "unix:" + sock}})
		require.NoError(t, err)
		require.Equal(t, "decode-proxy", c.Key, "the worker holds a stand-in, not the key")
		m, err := c.Build(context.Background())
		require.NoError(t, err)
		return m
	}
}

// shortTempDir keeps socket paths under the 108-byte limit.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dp")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestProxyConformance runs every provider's conformance suite (streaming,
// tool calls, usage, retries, errors) through the credential proxy: the
// same results as direct calls, with the key injected by the proxy.
func TestProxyConformance(t *testing.T) {
	for _, p := range conformanceProviders("..") {
		prov, _ := Find(p.Name)
		if prov.NoKey {
			continue
		}
		p.New = proxied(prov)
		t.Run(p.Name, func(t *testing.T) { conformance.Run(t, p) })
	}
}

func TestProxyRefusesAllButModelCalls(t *testing.T) {
	hit, auth := false, ""
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit, auth = true, r.Header.Get("Authorization") })}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go up.Serve(l)
	defer up.Close()
	openai, _ := Find("openai")
	h := Proxy(map[string]ProxyUpstream{"openai": {Provider: openai, Base: "http://" + l.Addr().String() + "/v1", Key: "sk-real"}}, "tok-123")
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ps := &http.Server{Handler: h}
	go ps.Serve(pl)
	defer ps.Close()
	base := "http://" + pl.Addr().String()
	do := func(method, path, key string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, do("GET", "/openai/models", "tok-123"), "listing models is not a model call")
	assert.Equal(t, http.StatusForbidden, do("POST", "/openai/files", "tok-123"))
	assert.Equal(t, http.StatusForbidden, do("POST", "/openai/chat/completions/../../files", "tok-123"))
	assert.Equal(t, http.StatusNotFound, do("POST", "/anthropic/v1/messages", "tok-123"), "no key held for it")
	assert.Equal(t, http.StatusUnauthorized, do("POST", "/openai/chat/completions", "wrong"), "the per-run token is checked")
	assert.False(t, hit, "nothing refused reached the provider")
	assert.Equal(t, http.StatusOK, do("POST", "/openai/chat/completions", "tok-123"))
	assert.True(t, hit)
	assert.Equal(t, "Bearer sk-real", auth, "the proxy puts the real key in place of the token")
}
