package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var day = time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestRememberCreatesAppendsAndDedupes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "MEMORY.md")

	ok, err := Remember(path, "  Tests need\n  the race detector. ", day)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "- 2026-11-30: Tests need the race detector.\n", readString(t, path))

	ok, err = Remember(path, "Use make lint before pushing", day.AddDate(0, 0, 1))
	require.NoError(t, err)
	assert.True(t, ok)

	for _, dup := range []string{
		"tests need the race detector",
		"TESTS   NEED THE RACE DETECTOR.",
		"use make lint before pushing.",
	} {
		ok, err = Remember(path, dup, day.AddDate(0, 0, 2))
		require.NoError(t, err, dup)
		assert.False(t, ok, "%q is already remembered", dup)
	}
	assert.Equal(t, "- 2026-11-30: Tests need the race detector.\n"+
		"- 2026-12-01: Use make lint before pushing\n", readString(t, path))
}

func TestRememberKeepsHandWrittenFileAndSeesItsBullets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "MEMORY.md")
	require.NoError(t, os.WriteFile(path, []byte("# Memory\n* Vendor nothing.\n- 2025-01-02: Old fact"), 0o644))

	ok, err := Remember(path, "vendor nothing", day)
	require.NoError(t, err)
	assert.False(t, ok, "a hand-written bullet counts")
	ok, err = Remember(path, "old fact", day)
	require.NoError(t, err)
	assert.False(t, ok, "a dated bullet counts without its date")

	ok, err = Remember(path, "New fact.", day)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "# Memory\n* Vendor nothing.\n- 2025-01-02: Old fact\n- 2026-11-30: New fact.\n",
		readString(t, path), "a missing final newline is added before appending")
}

func TestRememberRefusesSecrets(t *testing.T) {
	for _, s := range []string{
		"The key is sk-proj-abcdefghijklmnop1234",
		"Anthropic key sk-ant-api03-abcdefghijklmnopqrstuv",
		"Gemini works with AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv",
		"push with ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"AWS AKIAIOSFODNN7EXAMPLE is the CI user",
		"the db uses password=hunter22",
		"Password: correct-horse",
		"set API_KEY=abcd1234 in .env",
		"curl -H 'Authorization: Bearer abcdefghijklmnop123456'",
		"the signing secret is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"session cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 works",
		"token x9Fq2LmZ7pR4tV8wK1nB6cY3 is for staging",
		"-----BEGIN OPENSSH PRIVATE KEY----- is in ~/.ssh",
	} {
		path := filepath.Join(t.TempDir(), "MEMORY.md")
		ok, err := Remember(path, s, day)
		assert.False(t, ok, s)
		assert.ErrorIs(t, err, ErrSecret, s)
		_, statErr := os.Stat(path)
		assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing written for %q", s)
	}
}

func TestRememberAcceptsOrdinarySentences(t *testing.T) {
	path := filepath.Join(t.TempDir(), "MEMORY.md")
	sentences := []string{
		"Run TestRemember2Dedupe_CaseInsensitive with -race.",
		"Providers live in agent/llm/anthropic/stream_test.go and friends.",
		"GOOGLE_GEMINI_BASE_URL_OVERRIDE_2 is read by the gemini adapter.",
		"The fix landed in commit 3f2a9c1.",
		"max_tokens=4096 is the default for replies.",
		"The token: it refreshes hourly.",
		"Use golang.org/x/crypto v0.56.0, not older.",
		"DECODE_STORE_XDG_STATE_HOME_2026 is only a test name.",
	}
	for _, s := range sentences {
		ok, err := Remember(path, s, day)
		require.NoError(t, err, s)
		assert.True(t, ok, s)
	}
	assert.Len(t, strings.Split(strings.TrimSpace(readString(t, path)), "\n"), len(sentences))
}

func TestRememberErrors(t *testing.T) {
	dir := t.TempDir()

	_, err := Remember(filepath.Join(dir, "MEMORY.md"), " \n\t", day)
	assert.ErrorContains(t, err, "empty sentence")

	// A directory where MEMORY.md should be: the read fails.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	_, err = Remember(filepath.Join(dir, "d"), "fine sentence", day)
	assert.ErrorContains(t, err, "remember:")
	assert.NotErrorIs(t, err, ErrSecret)
}
