package commands

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"decode/session"
)

//go:embed web
var webFiles embed.FS

// serverConfig is what the web view needs besides the store.
type serverConfig struct {
	Token string
	Addr  string   // the address listened on, host:port
	Exe   string   // the decode binary actions run
	Dir   string   // the working directory actions run in
	Env   []string // the actions' environment; nil: this process's
}

// server is decode serve's HTTP handler: auth checks, the embedded page,
// the JSON API, live streams and actions.
type server struct {
	st    *session.Store
	cfg   serverConfig
	mux   *http.ServeMux
	hosts map[string]bool // Host header values accepted
	runs  sync.WaitGroup  // resume subprocesses still running
	tree  treeCache
}

func newServer(st *session.Store, cfg serverConfig) *server {
	s := &server{st: st, cfg: cfg, mux: http.NewServeMux(), hosts: allowedHosts(cfg.Addr)}
	s.tree.nodes = map[string]treeNode{}
	web, _ := fs.Sub(webFiles, "web")
	s.mux.Handle("GET /", http.FileServerFS(web))
	s.mux.HandleFunc("GET /api/v1/sessions", s.apiSessions)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}", s.apiSession)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/entries", s.apiEntries)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/tree", s.apiTree)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/stat", s.apiStat)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/code", s.apiCode)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/events", s.sessionEvents)
	s.mux.HandleFunc("GET /api/v1/diff", s.apiDiff)
	s.mux.HandleFunc("GET /api/v1/events", s.listEvents)
	s.mux.HandleFunc("POST /api/v1/sessions/{id}/{action}", s.apiAction)
	return s
}

// wait waits for the resume subprocesses started from the page, until ctx
// ends.
func (s *server) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// allowedHosts lists the Host headers a request may carry: the address
// listened on, the loopback names on its port, and for a wildcard address
// this machine's IP addresses. Any other name is refused, so a DNS name rebound to 127.0.0.1 cannot reach
// the API from a page of that name.
func allowedHosts(addr string) map[string]bool {
	hosts := map[string]bool{addr: true}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return hosts
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		hosts[net.JoinHostPort(h, port)] = true
	}
	// Listening on every interface (0.0.0.0, ::), the page is reached by
	// one of this machine's addresses: IP literals, which no DNS answer
	// can rebind.
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				hosts[net.JoinHostPort(ipn.IP.String(), port)] = true
			}
		}
	}
	return hosts
}

// cookieName is per port: browsers share cookies between the ports of a
// host, and two decode serve on one machine must not overwrite each other.
func (s *server) cookieName() string {
	_, port, _ := net.SplitHostPort(s.cfg.Addr)
	return "decode_serve_" + port
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Cache-Control", "no-store")
	if !s.hosts[r.Host] {
		httpError(w, http.StatusMisdirectedRequest, "Host %q is not this server's address (%s); decode serve answers only to its own address", r.Host, s.cfg.Addr)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.sameOrigin(origin) {
		httpError(w, http.StatusForbidden, "cross-origin request from %q refused", origin)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A state-changing request must say where it comes from, as
		// browsers do: an absent Origin with a cross-site fetch is refused.
		if r.Header.Get("Origin") == "" || r.Header.Get("Sec-Fetch-Site") == "cross-site" || r.Header.Get("Sec-Fetch-Site") == "same-site" {
			httpError(w, http.StatusForbidden, "a %s needs an Origin header naming this server (same-origin requests only)", r.Method)
			return
		}
	}
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
		if !s.tokenOK(tok) {
			httpError(w, http.StatusUnauthorized, "wrong token: use the URL decode serve printed on stderr")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		// Take the token out of the address bar and the history.
		q := r.URL.Query()
		q.Del("token")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return
	}
	if !s.authorized(r) {
		httpError(w, http.StatusUnauthorized, "no token: open the URL decode serve printed on stderr (http://%s/?token=…), or send Authorization: Bearer TOKEN", s.cfg.Addr)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *server) sameOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.Path == "" && s.hosts[u.Host]
}

func (s *server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// authorized reports whether r carries the token, in the cookie or as a
// bearer token.
func (s *server) authorized(r *http.Request) bool {
	if c, err := r.Cookie(s.cookieName()); err == nil && s.tokenOK(c.Value) {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.tokenOK(tok)
}

// httpError answers with a JSON error {"error": "..."}.
func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// writeAPI answers with v as JSON.
func writeAPI(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// storeError maps a store error to a status: a session that does not
// resolve is 404, a context ended is 503, anything else 500.
func storeError(w http.ResponseWriter, err error) {
	var nf *session.NotFoundError
	var amb *session.AmbiguousError
	switch {
	case errors.As(err, &nf):
		httpError(w, http.StatusNotFound, "%s", err.Error())
	case errors.As(err, &amb):
		httpError(w, http.StatusBadRequest, "%s", err.Error())
	case errors.Is(err, context.Canceled):
		httpError(w, http.StatusServiceUnavailable, "%s", err.Error())
	default:
		httpError(w, http.StatusInternalServerError, "%s", err.Error())
	}
}
