package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/agent/llm/script"
	"decode/session"
)

// factoryIn is a factory over a hermetic home, outside any repository (its
// sessions go to DECODE_STORE); it has the memo NewFactory gives.
func factoryIn(t *testing.T) (*Factory, string, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "DECODE_STORE": filepath.Join(home, "store"),
		"GIT_CEILING_DIRECTORIES": home}
	var out, errb bytes.Buffer
	f := &Factory{
		Version: "test",
		IO:      &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb},
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string { return nil },
		Getwd:   func() (string, error) { return home, nil },
		memo:    newFactoryMemo(),
	}
	return f, home, &out, &errb
}

func TestFactoryFunctionsAreReplaceable(t *testing.T) {
	f, home, out, errb := factoryIn(t)
	fake, err := script.Parse("fake.json", []byte(`{"responses": [{"text": "from the fake"}]}`))
	require.NoError(t, err)
	var asked []string
	f.Model = func(_ context.Context, name string, cfg Config) (llm.Model, error) {
		asked = append(asked, name+"|"+cfg.Model)
		return fake, nil
	}
	f.Config = func(root string) (Config, []string, error) {
		return Config{Model: "configured:model", MaxStdin: defaultMaxStdin}, nil, nil
	}
	var stores []string
	f.Store = func(dir string) (*session.Store, error) {
		stores = append(stores, dir)
		return f.openStoreAt(dir)
	}

	// No key is set: only the replaced Model can answer.
	code := Main([]string{"decode", "ask", "say hi"}, f)
	require.Equal(t, ExitOK, code, "stderr: %s", errb)
	assert.Contains(t, out.String(), "from the fake")
	assert.Equal(t, []string{"configured:model|configured:model"}, asked, "the model is the one the replaced Config names")
	assert.Equal(t, []string{home}, stores, "the session went to the replaced Store")

	// -C before the command reaches the replaced WorkDir as the default.
	sub := filepath.Join(home, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	var dirs []string
	f.WorkDir = func(flag string) (string, error) {
		d, err := f.resolveDir(flag)
		dirs = append(dirs, d)
		return d, err
	}
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"decode", "-C", "sub", "log"}, f), "stderr: %s", errb)
	assert.Contains(t, dirs, sub)
	assert.Equal(t, sub, stores[len(stores)-1])
}

func TestFactoryMemoisesConfigAndStore(t *testing.T) {
	f, home, _, _ := factoryIn(t)
	cfgFile := filepath.Join(home, ".config", "decode", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfgFile), 0o755))
	require.NoError(t, os.WriteFile(cfgFile, []byte("model = \"first:m\"\n[models.\"x:y\"]\ncontext_window = 1000\n"), 0o644))

	c1, _, err := f.loadConfig("")
	require.NoError(t, err)
	require.Equal(t, "first:m", c1.Model)
	c1.Models["added:by-caller"] = ModelConfig{}
	c1.Allow = append(c1.Allow, "bash")
	require.NoError(t, os.WriteFile(cfgFile, []byte("model = \"second:m\"\n"), 0o644))
	c2, _, err := f.loadConfig("")
	require.NoError(t, err)
	assert.Equal(t, "first:m", c2.Model, "read once per root")
	assert.NotContains(t, c2.Models, "added:by-caller", "a caller's change to its copy is not seen by the next")
	assert.Empty(t, c2.Allow)

	s1, err := f.storeAt(home)
	require.NoError(t, err)
	s2, err := f.storeAt(home)
	require.NoError(t, err)
	assert.Same(t, s1, s2, "one store per directory")

	// A Factory literal (no memo) builds each time, as tests expect.
	lit := *f
	lit.memo = nil
	c3, _, err := lit.loadConfig("")
	require.NoError(t, err)
	assert.Equal(t, "second:m", c3.Model)
	s3, err := lit.storeAt(home)
	require.NoError(t, err)
	assert.NotSame(t, s1, s3)
}
