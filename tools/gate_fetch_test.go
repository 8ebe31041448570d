package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fetchAsk is web_fetch with no rule for the host: asked in every mode but
// bypass, plan mode included.
var fetchAsk = outcome{Ask, Ask, Ask, Allow}

// fetchCase is one URL with its outcome with no rules, with the allow rule
// web_fetch(domain:go.dev), and with the deny rule web_fetch(domain:evil.example).
type fetchCase struct {
	url                   string
	none, allowed, denied outcome
}

// goDev and evil are the hosts the rule sets name.
var (
	goDev = fetchCase{none: fetchAsk, allowed: allowAll, denied: fetchAsk}
	evil  = fetchCase{none: fetchAsk, allowed: fetchAsk, denied: denyAll}
	other = fetchCase{none: fetchAsk, allowed: fetchAsk, denied: fetchAsk}
	bad   = fetchCase{none: denyAll, allowed: denyAll, denied: denyAll}
)

func fc(url string, c fetchCase) fetchCase { c.url = url; return c }

var fetchCases = []fetchCase{
	// The named host and its subdomains, however the URL is spelled.
	fc("https://go.dev/", goDev),
	fc("https://go.dev/doc/effective_go?x=1#names", goDev),
	fc("http://go.dev", goDev),
	fc("https://pkg.go.dev/net/http", goDev),
	fc("https://a.b.c.go.dev/", goDev),
	fc("HTTPS://GO.DEV/", goDev),
	fc("https://Go.Dev./x", goDev),
	fc("https://go.dev:8443/", goDev),
	fc("https://user:pw@go.dev/", goDev),
	fc("https://evil.example@go.dev/", goDev),      // userinfo, not the host
	fc("https://evil.example%2F@go.dev/", goDev),   // the same, escaped
	fc("https://evil.example:443@go.dev/x", goDev), // a "port" in the userinfo
	// Look-alikes of go.dev are other hosts.
	fc("https://go.dev.evil.example/", evil),
	fc("https://go.dev.evil.example./", evil),
	fc("https://go.dev@evil.example/", evil),
	fc("https://go.dev:443@evil.example/", evil),
	fc("https://user:go.dev@evil.example/", evil),
	fc("https://evil.example/go.dev", evil),
	fc("https://evil.example/?u=https://go.dev/", evil),
	fc("https://evil.example#@go.dev", evil),
	fc("https://evil.example?@go.dev", evil),
	fc("https://sub.evil.example/", evil),
	fc("https://EVIL.EXAMPLE/", evil),
	fc("https://evilgo.dev/", other),
	fc("https://go-dev.example/", other),
	fc("https://go.devx/", other),
	fc("https://go.de/", other),
	fc("https://dev/", other),
	fc("https://godev/", other),
	fc("https://g\u043e.dev/", other), // Cyrillic о
	fc("https://xn--g-0tb.dev/", other),
	fc("https://go\uff0edev/", other), // fullwidth full stop
	fc("https://go.dev%252eevil.example/", other),
	fc("https://notevil.example/", other),
	fc("https://evil.example.org/", other),
	fc("https://127.0.0.1/", other),
	fc("http://[::1]:8080/", other),
	fc("https://169.254.169.254/latest/meta-data/", other),
	// URLs the gate cannot place are denied in every mode.
	fc("go.dev/doc", bad),
	fc("//go.dev/doc", bad),
	fc(" https://evil.example/", bad),
	fc("https://go.dev\\@evil.example/", bad),
	fc("https://go.dev%2Eevil.example/", bad),
	fc("https://go.dev:80:90/", bad),
	fc("file:///etc/passwd", bad),
	fc("ftp://go.dev/x", bad),
	fc("javascript:alert(1)", bad),
	fc("https:///path", bad),
	fc("", bad),
}

// TestGateFetchCorpus checks web_fetch domain rules in every mode: a rule
// covers its host and subdomains only, and a URL the gate cannot place is
// never let through.
func TestGateFetchCorpus(t *testing.T) {
	root := t.TempDir()
	sets := []struct {
		name        string
		allow, deny []string
		pick        func(fetchCase) outcome
	}{
		{"no rules", nil, nil, func(c fetchCase) outcome { return c.none }},
		{"allow go.dev", []string{"web_fetch(domain:go.dev)"}, nil, func(c fetchCase) outcome { return c.allowed }},
		{"deny evil.example", nil, []string{"web_fetch(domain:evil.example)"}, func(c fetchCase) outcome { return c.denied }},
	}
	var escapes, mismatches []string
	for _, set := range sets {
		for mi, mode := range corpusModes {
			g, err := NewGate(GateConfig{Mode: mode, Root: root, Allow: set.allow, Deny: set.deny})
			require.NoError(t, err)
			for _, c := range fetchCases {
				args, err := json.Marshal(map[string]string{"url": c.url})
				require.NoError(t, err)
				v := g.Check("web_fetch", true, args)
				want := set.pick(c)[mi]
				if v.Decision == want {
					continue
				}
				line := fmt.Sprintf("[%s, %s] %q: got %s, want %s (%s)", set.name, mode, c.url, v.Decision, want, v.Reason)
				if v.Decision == Allow {
					escapes = append(escapes, line)
				} else {
					mismatches = append(mismatches, line)
				}
			}
		}
	}
	assert.Empty(t, escapes, "escapes:\n%s", strings.Join(escapes, "\n"))
	assert.Empty(t, mismatches, "wrong decisions:\n%s", strings.Join(mismatches, "\n"))
}

func TestGateFetchReason(t *testing.T) {
	g, err := NewGate(GateConfig{Root: t.TempDir(), Mode: ModeEdit})
	require.NoError(t, err)
	v := gateCheck(t, g, "web_fetch", true, `{"url":"https://example.com/x"}`)
	assert.Equal(t, Ask, v.Decision, "edit mode covers file edits, not requests out")
	assert.Contains(t, v.Reason, "web_fetch(domain:")
	assert.Contains(t, v.Reason, "`example.com`")
	v = gateCheck(t, g, "web_fetch", true, `{"url":"file:///etc/passwd"}`)
	assert.Equal(t, Deny, v.Decision)
	assert.Contains(t, v.Reason, "http(s) URL")
}
