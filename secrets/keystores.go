package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Backend names, in the order decode tries them (DECODE_KEYRING_BACKEND
// picks one).
const (
	BackendSecretService = "secret-service"
	BackendKernel        = "kernel"
	BackendFile          = "file"
)

// HelperName is the program that links github.com/99designs/keyring for the
// Secret Service and encrypted-file backends (cmd/decode-keyring). decode
// itself does not link it: the library's package init dials the session
// bus, or runs dbus-launch, in every process that links it.
const HelperName = "decode-keyring"

// Locator is a KeyStore that can say which of its backends holds a key.
type Locator interface {
	Locate(provider string) (key, backend string, err error)
}

// Chain is the OS key store: its backends in order. Get and Locate take
// the first backend holding a key, Set writes to the first backend, and
// Delete removes the key from every backend holding it.
type Chain struct {
	Stores []KeyStore
}

func (c *Chain) Name() string {
	var names []string
	for _, s := range c.Stores {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", then ")
}

func (c *Chain) Get(provider string) (string, error) {
	key, _, err := c.Locate(provider)
	return key, err
}

func (c *Chain) Locate(provider string) (string, string, error) {
	for _, s := range c.Stores {
		switch key, err := s.Get(provider); {
		case err == nil:
			return key, s.Name(), nil
		case !errors.Is(err, ErrNoKey):
			return "", "", err
		}
	}
	return "", "", ErrNoKey
}

func (c *Chain) Set(provider, key string) error {
	if len(c.Stores) == 0 {
		return errors.New("no key store backend here")
	}
	return c.Stores[0].Set(provider, key)
}

// SetWhere is Set, and the name of the backend written to.
func (c *Chain) SetWhere(provider, key string) (string, error) {
	if err := c.Set(provider, key); err != nil {
		return "", err
	}
	return c.Stores[0].Name(), nil
}

func (c *Chain) Delete(provider string) error {
	_, err := c.DeleteWhere(provider)
	return err
}

// DeleteWhere is Delete, and the names of the backends that held the key.
func (c *Chain) DeleteWhere(provider string) ([]string, error) {
	var held []string
	for _, s := range c.Stores {
		switch err := s.Delete(provider); {
		case err == nil:
			held = append(held, s.Name())
		case !errors.Is(err, ErrNoKey):
			return held, err
		}
	}
	if len(held) == 0 {
		return nil, ErrNoKey
	}
	return held, nil
}

// OpenKeyStores builds the OS key store from the environment, in the
// documented order: the Secret Service when a session bus runs
// (DBUS_SESSION_BUS_ADDRESS), the kernel keyring, then the encrypted file
// under $XDG_STATE_HOME/decode/keyring. DECODE_KEYRING_BACKEND keeps one of
// them only. Backends this machine lacks are left out; the reasons are
// returned for a message when none is left.
func OpenKeyStores(getenv func(string) string) (*Chain, []string) {
	only := getenv("DECODE_KEYRING_BACKEND")
	want := func(b string) bool { return only == "" || only == b }
	helper := findHelper(getenv)
	var c Chain
	var why []string
	if want(BackendSecretService) {
		switch {
		case getenv("DBUS_SESSION_BUS_ADDRESS") == "":
			why = append(why, "Secret Service: no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
		case helper == "":
			why = append(why, "Secret Service: "+HelperName+" is not installed next to decode or on PATH")
		default:
			c.Stores = append(c.Stores, &HelperStore{Backend: BackendSecretService, Helper: helper, Getenv: getenv})
		}
	}
	if want(BackendKernel) {
		if k, err := NewKernelKeyring(getenv("DECODE_KEYRING")); err == nil {
			c.Stores = append(c.Stores, k)
		} else {
			why = append(why, err.Error())
		}
	}
	if want(BackendFile) {
		if helper == "" {
			why = append(why, "encrypted file: "+HelperName+" is not installed next to decode or on PATH")
		} else {
			c.Stores = append(c.Stores, &HelperStore{Backend: BackendFile, Helper: helper, Getenv: getenv, Dir: KeyringDir(getenv)})
		}
	}
	return &c, why
}

// KeyringDir is the encrypted file backend's directory.
func KeyringDir(getenv func(string) string) string {
	state := getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(getenv("HOME"), ".local", "state")
	}
	return filepath.Join(state, "decode", "keyring")
}

// findHelper finds decode-keyring: DECODE_KEYRING_HELPER, next to the
// running program, or on PATH.
func findHelper(getenv func(string) string) string {
	if h := getenv("DECODE_KEYRING_HELPER"); h != "" {
		return h
	}
	if exe, err := os.Executable(); err == nil {
		h := filepath.Join(filepath.Dir(exe), HelperName)
		if fi, err := os.Stat(h); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return h
		}
	}
	if h, err := exec.LookPath(HelperName); err == nil {
		return h
	}
	return ""
}

// HelperStore is one backend of github.com/99designs/keyring, reached
// through the decode-keyring program.
type HelperStore struct {
	Backend string // secret-service or file
	Helper  string
	Getenv  func(string) string
	// Dir is the file backend's directory.
	Dir string
}

func (h *HelperStore) Name() string {
	if h.Backend == BackendFile {
		return "encrypted file (" + h.Dir + ")"
	}
	return "Secret Service"
}

func (h *HelperStore) Get(provider string) (string, error) {
	if h.Backend == BackendFile {
		// No file, no key: no need to start the helper or to ask for
		// the passphrase.
		if _, err := os.Stat(filepath.Join(h.Dir, provider)); errors.Is(err, os.ErrNotExist) {
			return "", ErrNoKey
		}
	}
	out, err := h.run("", "get", provider)
	return strings.TrimSpace(out), err
}

func (h *HelperStore) Set(provider, key string) error {
	if h.Backend == BackendFile {
		if h.Getenv("DECODE_KEYRING_PASSPHRASE") == "" {
			return errors.New("the encrypted key file needs a passphrase: set DECODE_KEYRING_PASSPHRASE (decode never prompts for it)")
		}
		if err := os.MkdirAll(h.Dir, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(h.Dir, 0o700); err != nil {
			return err
		}
	}
	_, err := h.run(key+"\n", "set", provider)
	return err
}

func (h *HelperStore) Delete(provider string) error {
	if h.Backend == BackendFile {
		if _, err := os.Stat(filepath.Join(h.Dir, provider)); errors.Is(err, os.ErrNotExist) {
			return ErrNoKey
		}
	}
	_, err := h.run("", "delete", provider)
	return err
}

// run starts the helper with only what it needs in its environment. With
// no session bus, DBUS_SESSION_BUS_ADDRESS is set to an address that
// cannot be dialled, so that the library's init does not run dbus-launch.
func (h *HelperStore) run(stdin string, args ...string) (string, error) {
	bus := h.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if bus == "" {
		bus = "disabled:"
	}
	env := []string{"PATH=" + h.Getenv("PATH"), "HOME=" + h.Getenv("HOME"), "DBUS_SESSION_BUS_ADDRESS=" + bus}
	for _, k := range []string{"XDG_RUNTIME_DIR", "DECODE_KEYRING_PASSPHRASE"} {
		if v := h.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if h.Backend == BackendFile {
		env = append(env, "DECODE_KEYRING_DIR="+h.Dir)
	}
	cmd := exec.Command(h.Helper, append([]string{h.Backend}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return "", ErrNoKey
	}
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s: %s", h.Name(), msg)
	}
	return out.String(), nil
}
