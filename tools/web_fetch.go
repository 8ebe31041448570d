package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html/charset"

	"decode/secrets"
)

//go:embed web_fetch.md
var webFetchDesc string

// Defaults of the web_fetch tool.
const (
	fetchTimeout      = 20 * time.Second
	fetchMaxRead      = 5 << 20
	fetchMaxOutput    = 50 << 10
	fetchMaxRedirects = 5
)

// WebFetchOptions configures the web_fetch tool.
type WebFetchOptions struct {
	// Client makes the requests (http.DefaultTransport when nil). Its
	// CheckRedirect and Timeout are not used: the tool applies its own.
	Client *http.Client
	// Timeout caps one fetch, redirects and reading included (20 s when zero).
	Timeout time.Duration
	// MaxRead caps the bytes read of a body (5 MB when zero).
	MaxRead int64
	// MaxOutput caps the text returned by one call (50 KB when zero).
	MaxOutput int
	// UserAgent is sent with each request ("decode" when empty).
	UserAgent string
	// Secrets are the values no URL may carry: a fetch whose URL holds one
	// (as is or escaped) is refused in every mode, before anything is sent.
	Secrets *secrets.Redactor
}

type webFetchArgs struct {
	URL    string `json:"url"`
	Offset int    `json:"offset,omitempty"`
}

// WebFetch is the web_fetch tool.
type WebFetch struct {
	*funcTool[webFetchArgs]
	o WebFetchOptions
}

// NewWebFetch returns the web_fetch tool. It is read-only (it changes
// nothing), but the gate still asks before it runs unless a
// web_fetch(domain:...) rule allows the host, as a request sends data out.
func NewWebFetch(o WebFetchOptions) *WebFetch {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = fetchTimeout
	}
	if o.MaxRead <= 0 {
		o.MaxRead = fetchMaxRead
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = fetchMaxOutput
	}
	if o.UserAgent == "" {
		o.UserAgent = "decode"
	}
	t := &WebFetch{o: o}
	t.funcTool = newFuncTool("web_fetch", webFetchDesc, true, t.run)
	return t
}

// errRedirect stops the client at a redirect the tool will not follow.
type errRedirect struct {
	to     string
	reason string
}

func (e *errRedirect) Error() string { return "redirect to " + e.to + ": " + e.reason }

// fetched is one response as the tool keeps it.
type fetched struct {
	url       *url.URL // after redirects
	status    int
	mediaType string
	params    map[string]string
	body      []byte
	cut       bool // the body was longer than MaxRead
}

func (t *WebFetch) run(ctx context.Context, a webFetchArgs) (Result, error) {
	if urlHoldsSecret(t.o.Secrets, a.URL) {
		return errResult("web_fetch: refused", "the URL contains a secret decode holds (an API key or a secret_env value); web_fetch never sends one anywhere"), nil
	}
	u, msg := parseFetchURL(a.URL)
	if msg != "" {
		return errResult("web_fetch: bad url", msg), nil
	}
	if a.Offset < 0 {
		return errResult("web_fetch: bad offset", "offset must not be negative"), nil
	}
	label := fetchLabel(u)
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	f, err := t.get(ctx, u)
	var redir *errRedirect
	switch {
	case errors.As(err, &redir):
		return Result{
			Content: fmt.Sprintf("%s redirects to %s, which was not followed: %s. Call web_fetch with that URL to fetch it.", u, redir.to, redir.reason),
			Note:    fmt.Sprintf("web_fetch %s: redirects to %s", label, redir.to),
		}, nil
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return errResult("web_fetch "+label+": timed out", fmt.Sprintf("fetching %s took longer than %s and was stopped", u, t.o.Timeout)), nil
	case err != nil:
		return errResult("web_fetch "+label+": failed", fmt.Sprintf("fetching %s failed: %v", u, err)), nil
	}
	text, kind, msg := t.convert(ctx, f)
	if msg != "" {
		return errResult("web_fetch "+label+": refused", msg), nil
	}
	return t.result(a, u, f, text, kind, label), nil
}

// parseFetchURL checks that s is an absolute http(s) URL with a host.
func parseFetchURL(s string) (*url.URL, string) {
	u, err := url.Parse(s) // as the gate parsed it: no trimming
	switch {
	case err != nil:
		return nil, fmt.Sprintf("%q is not a valid URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Sprintf("%q: only http and https URLs can be fetched", s)
	case u.Hostname() == "":
		return nil, fmt.Sprintf("%q has no host", s)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, ""
}

// fetchLabel is how a URL appears in the one-line note: host and path.
func fetchLabel(u *url.URL) string {
	s := u.Host + u.EscapedPath()
	if len(s) > 60 {
		s = s[:59] + "…"
	}
	return s
}

// get fetches u, following the redirects it may follow, and reads up to
// MaxRead bytes of the body.
func (t *WebFetch) get(ctx context.Context, u *url.URL) (*fetched, error) {
	c := *t.o.Client
	c.Timeout = 0 // the context carries the time cap
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > fetchMaxRedirects {
			return &errRedirect{to: req.URL.String(), reason: fmt.Sprintf("more than %d redirects", fetchMaxRedirects)}
		}
		return checkHop(via[len(via)-1].URL, req.URL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = u, u.Host // exactly the URL the gate checked, not a reparse
	req.Header.Set("User-Agent", t.o.UserAgent)
	req.Header.Set("Accept", "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.o.MaxRead+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	f := &fetched{url: resp.Request.URL, status: resp.StatusCode, body: body}
	if int64(len(body)) > t.o.MaxRead {
		f.body, f.cut = body[:t.o.MaxRead], true
	}
	f.mediaType, f.params, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return f, nil
}

// checkHop decides whether a redirect from one URL to the next is
// followed: only on the same host (an upgrade to https included). The gate
// approved the host, not the places it sends the request on to: for those
// the model is told where the page moved, and its next call goes through
// the gate like any other.
func checkHop(from, to *url.URL) error {
	if to.Scheme != "http" && to.Scheme != "https" {
		return &errRedirect{to: to.String(), reason: "it is not an http(s) URL"}
	}
	if !strings.EqualFold(from.Host, to.Host) || (from.Scheme != to.Scheme && to.Scheme != "https") {
		return &errRedirect{to: to.String(), reason: "it is on another host (or drops https), which the gate has not approved"}
	}
	return nil
}

// convert turns the body into text for the model: HTML to Markdown, text
// as it is. It returns a message instead for content it will not show.
func (t *WebFetch) convert(ctx context.Context, f *fetched) (text, kind, msg string) {
	mt := f.mediaType
	if mt == "" || mt == "application/octet-stream" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(f.body))
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	wide := strings.HasPrefix(strings.ToLower(f.params["charset"]), "utf-16") // NUL bytes are normal there
	if !isHTML && !textMedia(mt) || !wide && isBinary(f.body) {
		return "", "", fmt.Sprintf("%s is %s (%d bytes), not text; web_fetch returns only HTML, text and JSON", f.url, orDefault(mt, "of unknown type"), len(f.body))
	}
	body := toUTF8(f.body, f.mediaType, f.params["charset"], f.cut)
	if !isHTML {
		return body, mt, ""
	}
	conv := converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin()))
	md, err := conv.ConvertString(body, converter.WithDomain(f.url.String()), converter.WithContext(ctx))
	if err != nil {
		return "", "", fmt.Sprintf("%s could not be converted from HTML: %v", f.url, err)
	}
	return md, "html→markdown", ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// textMedia reports whether a media type is text the model can read.
func textMedia(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/yaml", "application/x-yaml", "application/toml",
		"application/x-sh", "application/sql", "application/graphql", "application/x-ndjson":
		return true
	}
	return false
}

// toUTF8 decodes body from the charset the server named or the page
// declares; UTF-8, by far the most common, passes through. A body cut at
// the size cap may end inside a character, which is not a reason to
// think it is not UTF-8.
func toUTF8(body []byte, mediaType, label string, cut bool) string {
	if label != "" {
		if enc, name := charset.Lookup(label); enc != nil && name != "utf-8" {
			if out, err := enc.NewDecoder().Bytes(body); err == nil {
				return string(out)
			}
		}
	}
	valid := body
	if cut {
		for i := 0; i < utf8.UTFMax && len(valid) > 0 && !utf8.Valid(valid); i++ {
			valid = valid[:len(valid)-1]
		}
	}
	if utf8.Valid(valid) {
		return string(valid)
	}
	if enc, _, _ := charset.DetermineEncoding(body, mediaType); enc != nil {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			return string(out)
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// result builds what the model sees: the text from offset, capped, with
// notes saying where it came from and how to read on.
func (t *WebFetch) result(a webFetchArgs, u *url.URL, f *fetched, text, kind, label string) Result {
	text = strings.TrimSpace(text)
	total := len(text)
	var head []string
	if f.url.String() != u.String() {
		head = append(head, "[redirected to "+f.url.String()+"]")
	}
	if f.cut {
		head = append(head, fmt.Sprintf("[the page is larger than %d bytes; only the first %d were read]", t.o.MaxRead, t.o.MaxRead))
	}
	if a.Offset > total {
		return errResult("web_fetch "+label+": bad offset", fmt.Sprintf("offset %d is past the end of the text (%d bytes)", a.Offset, total))
	}
	start := a.Offset
	for start < total && !utf8.RuneStart(text[start]) {
		start++
	}
	end := total
	var tail string
	if end-start > t.o.MaxOutput {
		end = cutAt(text, start, start+t.o.MaxOutput)
		tail = fmt.Sprintf("\n[cut at %d KB: bytes %d-%d of %d shown; call web_fetch with offset %d for more]", t.o.MaxOutput>>10, start, end, total, end)
	}
	if start > 0 {
		head = append(head, fmt.Sprintf("[from byte %d of %d]", start, total))
	}
	body := text[start:end]
	if body == "" {
		body = "(the page has no text)"
	}
	content := body + tail
	if len(head) > 0 {
		content = strings.Join(head, "\n") + "\n" + content
	}
	res := Result{Content: content, Note: fmt.Sprintf("web_fetch %s (%d KB, %s)", label, (total+1023)>>10, kind)}
	if f.status >= 400 {
		res.IsError = true
		res.Content = fmt.Sprintf("HTTP %d %s from %s\n%s", f.status, http.StatusText(f.status), f.url, content)
		res.Note = fmt.Sprintf("web_fetch %s: HTTP %d", label, f.status)
	}
	return res
}

// cutAt returns where to cut text between start and limit: the last line
// break in the second half, else the last rune boundary before limit.
func cutAt(text string, start, limit int) int {
	if i := strings.LastIndexByte(text[start:limit], '\n'); i > (limit-start)/2 {
		return start + i + 1
	}
	for limit > start && !utf8.RuneStart(text[limit]) {
		limit--
	}
	return limit
}

// urlHoldsSecret reports whether raw, as is or unescaped once or twice,
// holds one of the values r knows.
func urlHoldsSecret(r *secrets.Redactor, raw string) bool {
	for range 3 {
		if r.ContainsKnown(raw) {
			return true
		}
		next, err := url.QueryUnescape(raw)
		if err != nil || next == raw {
			if p, err := url.PathUnescape(raw); err == nil && p != raw {
				next = p
			} else {
				return false
			}
		}
		raw = next
	}
	return r.ContainsKnown(raw)
}
