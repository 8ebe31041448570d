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
	"os/exec"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// defaultListen is where decode serve listens unless told otherwise.
const defaultListen = "127.0.0.1:7433"

// ServeOptions are the inputs of `decode serve`.
type ServeOptions struct {
	F         *Factory
	Dir       string
	Listen    string
	Open      bool
	TokenFile string
	// Exe is the decode binary that actions (approve, resume, …) run as
	// subprocesses; empty means this process's own executable.
	Exe string
}

// NewCmdServe builds `decode serve`.
func NewCmdServe(f *Factory, runF func(*cli.Context, *ServeOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *ServeOptions) error { return serveRun(c.Context, o) }
	}
	return &cli.Command{
		Name:  "serve",
		Usage: "a web view of this repository's sessions: tree, transcripts, live runs, approvals",
		Description: `Serves a page and a read-only JSON API (/api/v1/) over the session store of
the current repository, with live streams (server-sent events) that follow
running sessions as their entries are committed. Approve, deny, answer,
steer and resume on the page run the same decode binary as a subprocess
(decode approve ID, decode resume ID, …), so every entry is the CLI's own,
signed as the CLI signs it.

Safe by default: it listens on 127.0.0.1, and a random token, printed once
on stderr as a URL, is needed for every request (the page keeps it in an
HttpOnly, SameSite=Strict cookie). Requests naming another Host are refused
(DNS rebinding), and so are POSTs from another Origin (CSRF). A --listen
address that is not loopback needs --token-file, so the token is one you
chose to share. Only the embedded page and the session store are served.

   decode serve                       # http://127.0.0.1:7433/?token=…
   decode serve --open                # and open the browser
   decode serve --listen 127.0.0.1:0  # any free port`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "serve the sessions of `DIR` instead of the current directory"},
			&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "listen on `ADDR` (host:port)"},
			&cli.BoolFlag{Name: "open", Usage: "open the page in the browser (xdg-open)"},
			&cli.StringFlag{Name: "token-file", Usage: "read the access token from `FILE` instead of making a random one (required for a non-loopback --listen)"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("serve takes no arguments (got %q); see decode serve --help", c.Args().First())
			}
			return runF(c, &ServeOptions{F: f, Dir: c.String("dir"), Listen: c.String("listen"),
				Open: c.Bool("open"), TokenFile: c.String("token-file")})
		},
	}
}

func serveRun(ctx context.Context, o *ServeOptions) error {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return usageErrorf("--listen %q: want HOST:PORT, such as 127.0.0.1:7433", o.Listen)
	}
	if !loopbackHost(host) && o.TokenFile == "" {
		return usageErrorf("--listen %s is not a loopback address: anyone who can reach it could try; give --token-file FILE with a long random token you share deliberately", o.Listen)
	}
	token, err := serveToken(o.TokenFile)
	if err != nil {
		return err
	}
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	dir, err := o.F.workDir(o.Dir)
	if err != nil {
		return err
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("serve: find the decode binary for actions: %w", err)
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w (is another decode serve running? --listen 127.0.0.1:0 picks a free port)", err)
	}
	addr := ln.Addr().String()
	srv := newServer(st, serverConfig{Token: token, Addr: addr, Exe: exe, Dir: dir})
	url := "http://" + addr + "/?token=" + token
	fmt.Fprintf(o.F.IO.Err, "decode serve: sessions of %s; open this address (it holds the access token):\n", st.GitDir())
	// The token is printed once, on purpose, past the redactor (which
	// would mask a token= parameter).
	w := o.F.Unredacted
	if w == nil {
		w = o.F.IO.Err
	}
	if f, ok := o.F.IO.Err.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	fmt.Fprintln(w, url)
	if o.Open {
		if err := exec.Command("xdg-open", url).Start(); err != nil {
			fmt.Fprintf(o.F.IO.Err, "decode serve: could not open a browser (%v); open the URL above\n", err)
		}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut)
	srv.wait(shut)
	fmt.Fprintln(o.F.IO.Err, "decode serve: stopped")
	return nil
}

// loopbackHost reports whether host names this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveToken reads the token from file, or makes a random one.
func serveToken(file string) (string, error) {
	if file == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n;,\"") {
		return "", errors.New("--token-file: the token must be one line of at least 16 characters with no spaces, quotes, commas or semicolons")
	}
	return tok, nil
}
