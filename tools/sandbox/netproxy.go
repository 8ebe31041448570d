package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HostRule is one host a command may reach through the proxy: "host",
// "host:port" or "*.example.com" (any name under example.com, not
// example.com itself), with an optional port.
type HostRule struct {
	Host string // lower case; "*.x" for a wildcard
	Port string // "" for any port
}

// ParseHostRule parses one --allow-net HOST.
func ParseHostRule(s string) (HostRule, error) {
	in := strings.TrimSpace(s)
	if in == "" || strings.ContainsAny(in, "/ \t@") {
		return HostRule{}, fmt.Errorf("bad host %q: want host, host:port or *.example.com (no scheme or path)", s)
	}
	host, port := in, ""
	if h, p, err := net.SplitHostPort(in); err == nil {
		host, port = h, p
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return HostRule{}, fmt.Errorf("bad port in %q: want 1-65535", s)
		}
	} else if strings.HasPrefix(in, "[") && strings.HasSuffix(in, "]") {
		host = in[1 : len(in)-1]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if rest == "" || strings.Contains(rest, "*") {
			return HostRule{}, fmt.Errorf("bad host %q: a wildcard is only *.example.com", s)
		}
	} else if host == "" || strings.Contains(host, "*") {
		return HostRule{}, fmt.Errorf("bad host %q: a wildcard is only *.example.com", s)
	}
	return HostRule{Host: host, Port: port}, nil
}

func (r HostRule) String() string {
	if r.Port == "" {
		return r.Host
	}
	return net.JoinHostPort(r.Host, r.Port)
}

// matches reports whether the rule allows host:port. A wildcard never
// matches an IP literal; an IP literal is allowed only when named.
func (r HostRule) matches(host, port string) bool {
	if r.Port != "" && r.Port != port {
		return false
	}
	if rest, ok := strings.CutPrefix(r.Host, "*."); ok {
		return net.ParseIP(host) == nil && strings.HasSuffix(host, "."+rest)
	}
	if ip := net.ParseIP(host); ip != nil {
		rip := net.ParseIP(r.Host)
		return rip != nil && rip.Equal(ip)
	}
	return host == r.Host
}

// Proxy is an HTTP proxy (CONNECT and plain HTTP) that lets commands reach
// only the hosts its rules name. It listens on a Unix socket in a private
// directory; the sandbox helper forwards a loopback port inside the
// command's network namespace to it. decode dials the hosts itself, so a
// command never resolves or reaches anything else.
type Proxy struct {
	// Socket is the Unix socket's path.
	Socket string
	rules  []HostRule
	dir    string
	ln     net.Listener
	srv    *http.Server
	dialer net.Dialer
	tr     *http.Transport
	wg     sync.WaitGroup
	// resolve, set by tests only, maps an allowed host:port to the
	// address dialled (a made-up name to a server on 127.0.0.1).
	resolve func(addr string) string
}

// StartProxy starts a proxy for rules in a new private directory; Close
// stops it and removes the directory.
func StartProxy(rules []HostRule) (*Proxy, error) {
	dir, err := os.MkdirTemp("", "decode-netproxy-")
	if err != nil {
		return nil, fmt.Errorf("network proxy: %w", err)
	}
	p := &Proxy{Socket: filepath.Join(dir, "proxy.sock"), rules: rules, dir: dir}
	p.dialer = net.Dialer{Timeout: 30 * time.Second}
	p.tr = &http.Transport{Proxy: nil, DialContext: p.dial, ForceAttemptHTTP2: false, MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second}
	if p.ln, err = net.Listen("unix", p.Socket); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("network proxy: %w", err)
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(p.ln)
	}()
	return p, nil
}

// Close stops the proxy, ends its connections and removes its directory.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	os.RemoveAll(p.dir)
	return err
}

// Allowed reports whether a command may reach host:port.
func (p *Proxy) Allowed(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range p.rules {
		if r.matches(host, port) {
			return true
		}
	}
	return false
}

// dial reaches only what the rules allow (the transport asks again for
// each connection, redirects included).
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !p.Allowed(host, port) {
		return nil, fmt.Errorf("%s is not allowed", addr)
	}
	if p.resolve != nil {
		addr = p.resolve(addr)
	}
	return p.dialer.DialContext(ctx, "tcp", addr)
}

// refuse answers 403 with a line naming the host and the flag that
// allows it.
func refuse(w http.ResponseWriter, host string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Decode-Refused", host)
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "decode sandbox: the network is closed to %s; run with --allow-net %s (or add it to [sandbox] allow_net)\n", host, host)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "decode sandbox proxy: want an absolute http:// URL or CONNECT host:port", http.StatusBadRequest)
		return
	}
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
	}
	if !p.Allowed(host, port) {
		refuse(w, host)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "decode sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// connect opens a tunnel to an allowed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "decode sandbox proxy: CONNECT wants host:port", http.StatusBadRequest)
		return
	}
	if !p.Allowed(host, port) {
		refuse(w, host)
		return
	}
	up, err := p.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "decode sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "decode sandbox proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		up.Close()
		down.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		_, _ = up.Write(b)
	}
	pipe(down, up)
}

// pipe copies both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

// ProxyEnv is what a command's environment gets for a proxy on
// 127.0.0.1:port.
func ProxyEnv(port int) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1",
	}
}
