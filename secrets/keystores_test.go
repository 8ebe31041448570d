package secrets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChainOrder(t *testing.T) {
	ss, kernel, file := &MemoryKeyStore{Label: "Secret Service"}, &MemoryKeyStore{Label: "kernel keyring"}, &MemoryKeyStore{Label: "encrypted file"}
	c := &Chain{Stores: []KeyStore{ss, kernel, file}}
	_, _, err := c.Locate("openai")
	assert.ErrorIs(t, err, ErrNoKey)
	assert.ErrorIs(t, c.Delete("openai"), ErrNoKey)

	require.NoError(t, file.Set("openai", "sk-file"))
	key, where, err := c.Locate("openai")
	require.NoError(t, err)
	assert.Equal(t, []string{"sk-file", "encrypted file"}, []string{key, where}, "a later backend is asked when earlier ones hold nothing")

	require.NoError(t, kernel.Set("openai", "sk-kernel"))
	key, where, _ = c.Locate("openai")
	assert.Equal(t, []string{"sk-kernel", "kernel keyring"}, []string{key, where}, "the kernel keyring before the file")

	where, err = c.SetWhere("openai", "sk-ss")
	require.NoError(t, err)
	assert.Equal(t, "Secret Service", where, "login writes to the first backend")
	key, where, _ = c.Locate("openai")
	assert.Equal(t, []string{"sk-ss", "Secret Service"}, []string{key, where})

	require.NoError(t, c.Delete("openai"))
	for _, s := range c.Stores {
		_, err := s.Get("openai")
		assert.ErrorIs(t, err, ErrNoKey, "logout removes the key from %s too", s.Name())
	}
}

func TestOpenKeyStoresOrder(t *testing.T) {
	dir := t.TempDir()
	helper := filepath.Join(dir, HelperName)
	require.NoError(t, os.WriteFile(helper, []byte("#!/bin/sh\nexit 3\n"), 0o755))
	names := func(env map[string]string) []string {
		c, _ := OpenKeyStores(func(k string) string { return env[k] })
		var out []string
		for _, s := range c.Stores {
			switch s := s.(type) {
			case *HelperStore:
				out = append(out, s.Backend)
			case *KernelKeyring:
				out = append(out, BackendKernel)
			}
		}
		return out
	}
	_, kerr := NewKernelKeyring("")
	withKernel := func(bs ...string) []string {
		if kerr == nil {
			return bs
		}
		var out []string
		for _, b := range bs {
			if b != BackendKernel {
				out = append(out, b)
			}
		}
		return out
	}
	env := map[string]string{"HOME": dir, "DECODE_KEYRING_HELPER": helper, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}
	assert.Equal(t, withKernel(BackendSecretService, BackendKernel, BackendFile), names(env), "a session bus: the Secret Service first")
	delete(env, "DBUS_SESSION_BUS_ADDRESS")
	assert.Equal(t, withKernel(BackendKernel, BackendFile), names(env), "headless: no Secret Service")
	env["DECODE_KEYRING_BACKEND"] = BackendFile
	assert.Equal(t, []string{BackendFile}, names(env), "DECODE_KEYRING_BACKEND keeps one")

	env = map[string]string{"HOME": dir, "XDG_STATE_HOME": filepath.Join(dir, "state")}
	assert.Equal(t, filepath.Join(dir, "state", "decode", "keyring"), KeyringDir(func(k string) string { return env[k] }))
	delete(env, "XDG_STATE_HOME")
	assert.Equal(t, filepath.Join(dir, ".local", "state", "decode", "keyring"), KeyringDir(func(k string) string { return env[k] }))
}

func TestFileBackendRefusesWithoutPassphrase(t *testing.T) {
	dir := t.TempDir()
	h := &HelperStore{Backend: BackendFile, Helper: "/nonexistent", Dir: filepath.Join(dir, "kr"), Getenv: func(string) string { return "" }}
	err := h.Set("openai", "sk-x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DECODE_KEYRING_PASSPHRASE")
	_, err = h.Get("openai")
	assert.ErrorIs(t, err, ErrNoKey, "no file: no key, and no helper started")
}
