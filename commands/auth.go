package commands

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent/llm/providers"
	"decode/secrets"
)

// keyStore is the store decode auth login writes to: Keys when set (tests
// put a fake there), else the OS key store's backends in order (Secret
// Service, kernel keyring, encrypted file); nil when there is none.
// Opening it starts nothing: a backend's program runs only when asked.
func (f *Factory) keyStore() secrets.KeyStore {
	if f.Keys == nil && !f.keysOnce {
		f.keysOnce = true
		chain, why := secrets.OpenKeyStores(f.Getenv)
		f.keysWhy = why
		if len(chain.Stores) > 0 {
			f.Keys = chain
		}
	}
	return f.Keys
}

// AuthOptions are the inputs of `decode auth login|logout|status`.
type AuthOptions struct {
	F        *Factory
	Action   string // login, logout, status
	Provider string
}

// NewCmdAuth builds `decode auth`.
func NewCmdAuth(f *Factory, runF func(*cli.Context, *AuthOptions) error) *cli.Command {
	if runF == nil {
		runF = authRun
	}
	sub := func(name, args, usage string, needProvider bool) *cli.Command {
		return &cli.Command{
			Name: name, ArgsUsage: args, Usage: usage, OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				if needProvider && c.NArg() != 1 || !needProvider && c.NArg() != 0 {
					return usageErrorf("usage: decode auth %s %s", name, args)
				}
				return runF(c, &AuthOptions{F: f, Action: name, Provider: c.Args().First()})
			},
		}
	}
	return &cli.Command{
		Name:  "auth",
		Usage: "keep provider API keys in the OS key store; show where each key comes from",
		Description: `A provider's key is taken from the first of these that has one:
  1. its environment variable (OPENAI_API_KEY, …, or api_key_env), for CI;
  2. api_key_cmd under [providers.NAME] in your own config (pass show openai,
     op read …), run once per process, its output never logged or stored;
  3. the OS key store decode auth login writes to, first backend that works:
     the Secret Service (when a session bus runs), the kernel keyring
     (DECODE_KEYRING names a namespace of its own), then an encrypted file
     in $XDG_STATE_HOME/decode/keyring (passphrase: DECODE_KEYRING_PASSPHRASE;
     decode never prompts). DECODE_KEYRING_BACKEND=secret-service|kernel|file
     keeps one. The Secret Service and the file are reached through the
     decode-keyring program, installed next to decode.

   printf %s "$KEY" | decode auth login openai   # the key on stdin, never a file in the repo
   decode auth status                            # where each provider's key comes from
   decode auth logout openai`,
		Subcommands: []*cli.Command{
			sub("login", "PROVIDER", "read PROVIDER's key from stdin into the key store", true),
			sub("logout", "PROVIDER", "remove PROVIDER's key from the key store", true),
			sub("status", "", "say where each provider's key comes from", false),
		},
	}
}

func authRun(c *cli.Context, o *AuthOptions) error {
	f := o.F
	if o.Action == "status" {
		return authStatus(f)
	}
	p, ok := providers.Find(o.Provider)
	if !ok || p.NoKey {
		return usageErrorf("%q is not a provider that takes a key; providers: %s", o.Provider, providers.Names())
	}
	store := f.keyStore()
	if store == nil {
		return errors.New("no key store here (" + strings.Join(f.keysWhy, "; ") + "); set " + strings.Join(p.KeyEnv, " or ") + " or api_key_cmd instead")
	}
	if o.Action == "logout" {
		where := []string{store.Name()}
		var err error
		if c, ok := store.(*secrets.Chain); ok {
			where, err = c.DeleteWhere(p.Name)
		} else {
			err = store.Delete(p.Name)
		}
		if errors.Is(err, secrets.ErrNoKey) {
			fmt.Fprintf(f.IO.Err, "no %s key in the %s\n", p.Name, store.Name())
			return nil
		} else if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Err, "removed the %s key from the %s\n", p.Name, strings.Join(where, " and the "))
		return nil
	}
	if !f.IO.InPiped {
		return usageErrorf("decode auth login reads the key from stdin: printf %%s \"$KEY\" | decode auth login %s", p.Name)
	}
	line, err := bufio.NewReader(io.LimitReader(f.IO.In, 16<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return usageErrorf("no key on stdin")
	}
	f.redactor().Add(key)
	where := store.Name()
	if c, ok := store.(*secrets.Chain); ok {
		where, err = c.SetWhere(p.Name, key)
	} else {
		err = store.Set(p.Name, key)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Err, "stored the %s key in the %s\n", p.Name, where)
	return nil
}

// authStatus prints, for each provider, where its key comes from, never
// the key, and without running api_key_cmd.
func authStatus(f *Factory) error {
	dir, err := f.workDir("")
	if err != nil {
		return err
	}
	cfg, _, err := f.loadConfig(repoRoot(dir))
	if err != nil {
		return err
	}
	store := f.keyStore()
	for _, p := range providers.All() {
		if p.NoKey {
			continue
		}
		pc := cfg.Providers[p.Name]
		where := "no key (set " + strings.Join(p.KeyVars(providers.Settings{APIKeyEnv: pc.APIKeyEnv}), " or ") + ", api_key_cmd, or decode auth login " + p.Name + ")"
		switch {
		case firstSet(f.Getenv, p.KeyVars(providers.Settings{APIKeyEnv: pc.APIKeyEnv})) != "":
			where = "environment (" + firstSet(f.Getenv, p.KeyVars(providers.Settings{APIKeyEnv: pc.APIKeyEnv})) + ")"
		case pc.APIKeyCmd != "":
			where = "api_key_cmd (" + pc.APIKeyCmd + ")"
		case store != nil:
			if c, ok := store.(*secrets.Chain); ok {
				if _, backend, err := c.Locate(p.Name); err == nil {
					where = backend
				} else if !errors.Is(err, secrets.ErrNoKey) {
					where = "key store error: " + err.Error()
				}
			} else if _, err := store.Get(p.Name); err == nil {
				where = store.Name()
			}
		}
		fmt.Fprintf(f.IO.Out, "%-11s %s\n", p.Name, where)
	}
	return nil
}

// firstSet names the first of vars that is set, or "".
func firstSet(getenv func(string) string, vars []string) string {
	for _, v := range vars {
		if getenv(v) != "" {
			return v
		}
	}
	return ""
}
