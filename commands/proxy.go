package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"decode/agent/llm/providers"
)

// ProxyOptions are the inputs of `decode proxy`.
type ProxyOptions struct {
	F      *Factory
	Listen string
}

// NewCmdProxy builds `decode proxy`.
func NewCmdProxy(f *Factory, runF func(context.Context, *ProxyOptions) error) *cli.Command {
	if runF == nil {
		runF = proxyRun
	}
	return &cli.Command{
		Name:  "proxy",
		Usage: "hold the API keys and forward model calls only, so runs hold no key",
		Description: `decode proxy resolves each provider's key (environment, api_key_cmd, key
store) and serves model calls for runs started with DECODE_PROXY: it forwards
only the providers' model endpoints, puts the key in, and refuses everything
else. A run pointed at it reads no key and has none in its environment or
memory, so neither a tool nor a compromised worker can leak one.

   decode proxy --listen unix:/run/user/1000/decode.sock &
   DECODE_PROXY=unix:/run/user/1000/decode.sock decode run "..."

On loopback (--listen 127.0.0.1:PORT) it prints a per-run token; runs pass it
as DECODE_PROXY_TOKEN with DECODE_PROXY=http://127.0.0.1:PORT.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "`unix:PATH` or 127.0.0.1:PORT", Required: true},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			return runF(c.Context, &ProxyOptions{F: f, Listen: c.String("listen")})
		},
	}
}

func proxyRun(ctx context.Context, o *ProxyOptions) error {
	f := o.F
	dir, err := f.workDir("")
	if err != nil {
		return err
	}
	cfg, _, err := f.loadConfig(repoRoot(dir))
	if err != nil {
		return err
	}
	ups := map[string]providers.ProxyUpstream{}
	settings := f.providerSettings(cfg)
	for _, p := range providers.All() {
		if p.NoKey {
			continue
		}
		s := settings[p.Name]
		s.Proxy = ""
		key, source, err := p.KeySource(f.Getenv, s)
		if err != nil {
			continue
		}
		base, _ := p.Endpoint(f.Getenv, s)
		ups[p.Name] = providers.ProxyUpstream{Provider: p, Base: base, Key: key}
		fmt.Fprintf(f.IO.Err, "decode proxy: %s → %s (key from %s)\n", p.Name, base, source)
	}
	if len(ups) == 0 {
		return errors.New("decode proxy: no provider has a key (set one, api_key_cmd, or decode auth login)")
	}
	var l net.Listener
	token := ""
	if path, ok := strings.CutPrefix(o.Listen, "unix:"); ok {
		os.Remove(path) // a socket left by an earlier proxy
		old := umask(0o177)
		l, err = net.Listen("unix", path)
		umask(old)
		if err == nil {
			defer os.Remove(path)
		}
	} else {
		host, _, _ := net.SplitHostPort(o.Listen)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return usageErrorf("--listen %s: the proxy listens on a Unix socket or loopback only", o.Listen)
		}
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token = hex.EncodeToString(b)
		l, err = net.Listen("tcp", o.Listen)
		if err == nil {
			fmt.Fprintf(f.IO.Out, "DECODE_PROXY=http://%s DECODE_PROXY_TOKEN=%s\n", l.Addr(), token)
		}
	}
	if err != nil {
		return fmt.Errorf("decode proxy: %w", err)
	}
	srv := &http.Server{Handler: providers.Proxy(ups, token), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(f.IO.Err, "decode proxy: listening on %s\n", o.Listen)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
