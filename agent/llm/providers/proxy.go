package providers

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"

	"decode/agent/llm"
)

// proxyHost names the credential proxy in the URLs a worker sends to it
// over a Unix socket, where no host is dialled.
const proxyHost = "decode-proxy"

// modelEndpoints are the only paths (after the provider's base URL) the
// proxy forwards, by adapter: the model calls, nothing else.
var modelEndpoints = map[string]*regexp.Regexp{
	"openai":    regexp.MustCompile(`^/chat/completions$`),
	"anthropic": regexp.MustCompile(`^/v1/messages$`),
	"gemini":    regexp.MustCompile(`^/v1(beta)?/models/[A-Za-z0-9._-]+:(streamGenerateContent|generateContent)$`),
}

// authHeaders are the headers an adapter may carry its key in.
var authHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"}

// ProxyUpstream is one provider the proxy forwards to, with the key it
// injects.
type ProxyUpstream struct {
	Provider
	Base string
	Key  string
}

// Proxy is the credential proxy's handler (decode proxy): a worker sends
// POST /PROVIDER/PATH with a stand-in key; the proxy forwards only the
// provider's model endpoints to its real base URL, with the real key in
// place of the stand-in, and streams the answer back unchanged, so
// streaming, retries, usage and errors behave as direct calls. Token, when
// set, must be the stand-in (a loopback listener's per-run secret).
func Proxy(upstreams map[string]ProxyUpstream, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		rest = "/" + rest
		up, ok := upstreams[name]
		refuse := func(status int, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"decode_proxy"}}`, "decode proxy: "+msg)
		}
		switch {
		case !ok:
			refuse(http.StatusNotFound, fmt.Sprintf("no provider %q with a key here", name))
			return
		case r.Method != http.MethodPost || !modelEndpoints[up.Adapter()].MatchString(rest):
			refuse(http.StatusForbidden, fmt.Sprintf("%s %s is not a model endpoint of %s; only model calls are forwarded", r.Method, rest, name))
			return
		case token != "" && !carries(r, token):
			refuse(http.StatusUnauthorized, "the request does not carry this proxy's token")
			return
		}
		target, err := url.Parse(strings.TrimSuffix(up.Base, "/") + rest)
		if err != nil {
			refuse(http.StatusBadGateway, "bad base URL for "+name)
			return
		}
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL = target
				pr.Out.URL.RawQuery = withoutKey(r.URL.Query()).Encode()
				pr.Out.Host = target.Host
				for _, h := range authHeaders {
					if v := pr.In.Header.Get(h); v != "" {
						if strings.HasPrefix(v, "Bearer ") {
							pr.Out.Header.Set(h, "Bearer "+up.Key)
						} else {
							pr.Out.Header.Set(h, up.Key)
						}
					}
				}
			},
			Transport:     llm.HTTPClient().Transport,
			FlushInterval: -1, // stream each event as it comes
		}
		rp.ServeHTTP(w, r)
	})
}

// carries reports whether one of the request's key headers holds token.
func carries(r *http.Request, token string) bool {
	for _, h := range authHeaders {
		v := strings.TrimPrefix(r.Header.Get(h), "Bearer ")
		if v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 {
			return true
		}
	}
	return false
}

func withoutKey(q url.Values) url.Values {
	q.Del("key")
	return q
}

// ProxyChoice points a provider at a credential proxy (DECODE_PROXY):
// "unix:PATH" or "http://127.0.0.1:PORT", with token as the stand-in key
// ("decode-proxy" when empty). The worker holds no key.
func ProxyChoice(p Provider, model, proxy, token string) (Choice, error) {
	if token == "" {
		token = proxyHost
	}
	c := Choice{Provider: p, Model: model, Key: token}
	switch {
	case strings.HasPrefix(proxy, "unix:"):
		c.Base, c.Socket = "http://"+proxyHost+"/"+p.Name, strings.TrimPrefix(proxy, "unix:")
	case strings.HasPrefix(proxy, "http://127.") || strings.HasPrefix(proxy, "http://localhost") || strings.HasPrefix(proxy, "http://[::1]"):
		c.Base = strings.TrimSuffix(proxy, "/") + "/" + p.Name
	default:
		return Choice{}, &llm.Error{Kind: llm.ErrConfig, Provider: p.Name,
			Msg: fmt.Sprintf("DECODE_PROXY=%q: use unix:PATH or http://127.0.0.1:PORT", proxy)}
	}
	return c, nil
}

// dialSocket makes client dial the Unix socket at path for every request.
func dialSocket(client *http.Client, path string) *http.Client {
	t, ok := client.Transport.(*http.Transport)
	if !ok {
		return client
	}
	t = t.Clone()
	var d net.Dialer
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
	c := *client
	c.Transport = t
	return &c
}
