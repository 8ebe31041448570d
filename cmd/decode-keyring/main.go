// Command decode-keyring is decode's bridge to github.com/99designs/keyring:
// the Secret Service (a desktop's key store, over the session bus) and an
// encrypted file. It is a separate program because the library's package
// init connects to the session bus (or runs dbus-launch) in every process
// that links it; decode runs it only for decode auth, and for a key that
// neither the environment nor api_key_cmd gave.
//
//	decode-keyring BACKEND get PROVIDER      # the key on stdout; exit 3 when none
//	decode-keyring BACKEND set PROVIDER      # the key on stdin
//	decode-keyring BACKEND delete PROVIDER   # exit 3 when none
//
// BACKEND is secret-service or file. The file backend keeps each key
// encrypted (JWE, PBES2) in DECODE_KEYRING_DIR, under the passphrase in
// DECODE_KEYRING_PASSPHRASE; it never prompts.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/99designs/keyring"
)

// service names decode's items in every backend.
const service = "decode"

// collection is the Secret Service collection keys go into: the user's
// login keyring, unlocked at login. A collection of decode's own would
// need the Secret Service to prompt for a new password, which a headless
// gnome-keyring cannot do ("Object does not exist at path /").
const collection = "login"

// Exit codes: 3 means the backend holds no key for the provider.
const (
	exitError = 1
	exitUsage = 2
	exitNoKey = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintln(stderr, "usage: decode-keyring secret-service|file get|set|delete PROVIDER")
		return exitUsage
	}
	backend, op, provider := args[0], args[1], args[2]
	cfg := keyring.Config{ServiceName: service, LibSecretCollectionName: collection}
	switch backend {
	case "secret-service":
		if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
			fmt.Fprintln(stderr, "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
			return exitError
		}
		cfg.AllowedBackends = []keyring.BackendType{keyring.SecretServiceBackend}
	case "file":
		cfg.AllowedBackends = []keyring.BackendType{keyring.FileBackend}
		cfg.FileDir = os.Getenv("DECODE_KEYRING_DIR")
		if cfg.FileDir == "" {
			fmt.Fprintln(stderr, "DECODE_KEYRING_DIR is not set")
			return exitUsage
		}
		cfg.FilePasswordFunc = func(string) (string, error) {
			if p := os.Getenv("DECODE_KEYRING_PASSPHRASE"); p != "" {
				return p, nil
			}
			return "", errors.New("the encrypted key file needs a passphrase: set DECODE_KEYRING_PASSPHRASE (decode never prompts for it)")
		}
	default:
		fmt.Fprintf(stderr, "unknown backend %q: secret-service or file\n", backend)
		return exitUsage
	}
	ring, err := keyring.Open(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	switch op {
	case "get":
		item, err := ring.Get(provider)
		if errors.Is(err, keyring.ErrKeyNotFound) {
			return exitNoKey
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitError
		}
		fmt.Fprintln(stdout, string(item.Data))
	case "set":
		line, err := bufio.NewReader(io.LimitReader(stdin, 16<<10)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, err)
			return exitError
		}
		key := strings.TrimSpace(line)
		if key == "" {
			fmt.Fprintln(stderr, "no key on stdin")
			return exitUsage
		}
		if err := ring.Set(keyring.Item{Key: provider, Data: []byte(key), Label: "decode: " + provider + " API key"}); err != nil {
			fmt.Fprintln(stderr, err)
			return exitError
		}
	case "delete":
		err := ring.Remove(provider)
		if errors.Is(err, keyring.ErrKeyNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNoKey
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitError
		}
	default:
		fmt.Fprintf(stderr, "unknown operation %q: get, set or delete\n", op)
		return exitUsage
	}
	return 0
}
