package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrNoKey is returned by a KeyStore that holds no key for a provider.
var ErrNoKey = errors.New("no key stored")

// KeyStore keeps provider API keys for decode auth login: the operating
// system's key store, or a fake in tests.
type KeyStore interface {
	// Name says where keys are kept ("kernel keyring", …).
	Name() string
	Get(provider string) (string, error)
	Set(provider, key string) error
	Delete(provider string) error
}

// keyCmdTimeout bounds an api_key_cmd (a password manager may prompt).
const keyCmdTimeout = 2 * time.Minute

var keyCmds sync.Map // command line → *keyCmdResult

type keyCmdResult struct {
	once sync.Once
	key  string
	err  error
}

// KeyCommand runs an api_key_cmd (`pass show openai`, `op read …`) through
// /bin/sh once per process, however many times a key is asked for, and
// returns its first line of output. The output is never logged: a failure
// says how the command ended and what it wrote on stderr, never stdout.
func KeyCommand(ctx context.Context, cmdline string) (string, error) {
	v, _ := keyCmds.LoadOrStore(cmdline, &keyCmdResult{})
	r := v.(*keyCmdResult)
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, keyCmdTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			r.err = fmt.Errorf("api_key_cmd %q failed (%v): %s", cmdline, err, firstLine(stderr.String()))
			return
		}
		r.key = firstLine(out.String())
		if r.key == "" {
			r.err = fmt.Errorf("api_key_cmd %q printed no key", cmdline)
		}
	})
	return r.key, r.err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// MemoryKeyStore is a KeyStore in memory, for tests.
type MemoryKeyStore struct {
	// Label is its Name ("memory" when empty).
	Label string
	mu    sync.Mutex
	keys  map[string]string
}

func (m *MemoryKeyStore) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return "memory"
}

func (m *MemoryKeyStore) Get(p string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[p]; ok {
		return k, nil
	}
	return "", ErrNoKey
}

func (m *MemoryKeyStore) Set(p, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[string]string{}
	}
	m.keys[p] = key
	return nil
}

func (m *MemoryKeyStore) Delete(p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[p]; !ok {
		return ErrNoKey
	}
	delete(m.keys, p)
	return nil
}
