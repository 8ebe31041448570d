package tools

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ruleKind says what a rule's specifier matches.
type ruleKind uint8

const (
	ruleAny           ruleKind = iota // tool: every call of the tool
	ruleCommandGlob                   // bash(go test *): glob over the command's words
	ruleCommandPrefix                 // bash(git diff:*): the command starts with these words
	rulePath                          // edit(src/**): doublestar pattern over the path
	ruleDomain                        // web_fetch(domain:go.dev): the URL's host or a subdomain
)

// rule is one parsed allow, ask or deny rule.
type rule struct {
	text string // as shown to people: tool or tool(specifier)
	tool string
	kind ruleKind
	// Command rules: the glob split at '*', or the prefix words.
	glob   []string
	bare   string // for a glob ending in " *": the glob without it, matched exactly
	prefix []string
	// Path rules: a slash pattern, relative to the root unless absolute.
	pattern  string
	absolute bool
	// Domain rules.
	domain string
	// mcpPrefix: tool is a prefix of the MCP tool names the rule covers.
	mcpPrefix bool
}

// pathRuleTools are the tools whose rules take a path pattern.
var pathRuleTools = map[string]bool{"read": true, "write": true, "edit": true, "multi_edit": true, "glob": true, "grep": true}

// CheckRule reports what is wrong with an --allow or --deny rule, so that a
// command can refuse it before it builds anything else.
func CheckRule(s string) error {
	_, err := parseRule(s)
	return err
}

// parseRule parses tool or tool(specifier).
func parseRule(s string) (rule, error) {
	s = strings.TrimSpace(s)
	tool, spec, hasSpec := strings.Cut(s, "(")
	tool = strings.TrimSpace(tool)
	if strings.HasPrefix(tool, "mcp__") {
		return parseMCPRule(s, tool, hasSpec)
	}
	if !validToolName(tool) {
		return rule{}, fmt.Errorf("rule %q: %q is not a tool name", s, tool)
	}
	r := rule{text: tool, tool: tool}
	if !hasSpec {
		return r, nil
	}
	if !strings.HasSuffix(spec, ")") {
		return rule{}, fmt.Errorf("rule %q: missing closing parenthesis", s)
	}
	spec = strings.TrimSpace(spec[:len(spec)-1])
	if spec == "" {
		return rule{}, fmt.Errorf("rule %q: empty specifier; write %s alone to match every call", s, tool)
	}
	var err error
	switch {
	case tool == "bash":
		err = r.parseCommand(spec)
	case pathRuleTools[tool]:
		err = r.parsePath(spec)
	case tool == "web_fetch":
		err = r.parseDomain(spec)
	default:
		err = fmt.Errorf("tool %s takes no specifier", tool)
	}
	if err != nil {
		return rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	return r, nil
}

func validToolName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (r *rule) parseCommand(spec string) error {
	for _, op := range []string{";", "&&", "||", "|", "\n", "`", "$("} {
		if strings.Contains(spec, op) {
			return fmt.Errorf("%q joins commands, but a rule matches one simple command at a time; write one rule per command", op)
		}
	}
	if words, ok := strings.CutSuffix(spec, ":*"); ok {
		r.kind = ruleCommandPrefix
		r.prefix = strings.Fields(words)
		if len(r.prefix) == 0 {
			return fmt.Errorf("no command before :*")
		}
		r.text = fmt.Sprintf("bash(%s:*)", strings.Join(r.prefix, " "))
		return nil
	}
	norm := strings.Join(strings.Fields(spec), " ")
	r.kind = ruleCommandGlob
	r.glob = strings.Split(norm, "*")
	if bare, ok := strings.CutSuffix(norm, " *"); ok {
		r.bare = bare
	}
	r.text = fmt.Sprintf("bash(%s)", norm)
	return nil
}

func (r *rule) parsePath(spec string) error {
	if strings.HasPrefix(spec, "~") {
		return fmt.Errorf("~ is not expanded in rules; write an absolute path or one relative to the workspace root")
	}
	p := strings.ReplaceAll(spec, "\\", "/")
	r.absolute = strings.HasPrefix(p, "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Errorf("%q: .. is not allowed in path patterns", spec)
		}
	}
	if !doublestar.ValidatePattern(p) {
		return fmt.Errorf("%q is not a valid path pattern", spec)
	}
	r.kind, r.pattern = rulePath, p
	r.text = fmt.Sprintf("%s(%s)", r.tool, p)
	return nil
}

func (r *rule) parseDomain(spec string) error {
	d, ok := strings.CutPrefix(spec, "domain:")
	if !ok {
		return fmt.Errorf("web_fetch rules take domain:HOST, as in web_fetch(domain:go.dev)")
	}
	d = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), "*.")
	if d == "" || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return fmt.Errorf("%q is not a host name", spec)
	}
	for _, c := range d {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return fmt.Errorf("%q is not a host name", spec)
		}
	}
	r.kind, r.domain = ruleDomain, d
	r.text = fmt.Sprintf("web_fetch(domain:%s)", d)
	return nil
}

// parseMCPRule parses a rule for MCP tools: mcp__server__tool, a glob
// ending in * (mcp__github__list_*), or mcp__server for all of a server's
// tools. MCP rules take no specifier.
func parseMCPRule(s, tool string, hasSpec bool) (rule, error) {
	if hasSpec {
		return rule{}, fmt.Errorf("rule %q: MCP tools take no specifier; write %s alone, or a name ending in * to match several tools", s, tool)
	}
	name, glob := strings.CutSuffix(tool, "*")
	if !validToolName(name) || strings.Contains(name, "*") {
		return rule{}, fmt.Errorf("rule %q: %q is not an MCP tool name (mcp__server__tool, or a prefix of one ending in *)", s, tool)
	}
	if !glob && strings.Count(name, "__") == 1 {
		name, glob = name+"__", true // mcp__server: every tool of the server
	}
	return rule{text: tool, tool: name, mcpPrefix: glob}, nil
}

// covers reports whether the rule applies to calls of tool: edit rules
// cover every tool that changes a file, read rules every tool that reads.
func (r *rule) covers(tool string) bool {
	switch {
	case r.mcpPrefix:
		return strings.HasPrefix(tool, r.tool)
	case r.tool == tool:
		return true
	case r.tool == "edit":
		return tool == "multi_edit" || tool == "write"
	case r.tool == "read":
		return tool == "glob" || tool == "grep"
	}
	return false
}

// matchCommand reports whether a bash rule matches one command, given its
// words and their joined form.
func (r *rule) matchCommand(words []shellWord, joined string) bool {
	switch r.kind {
	case ruleAny:
		return true
	case ruleCommandPrefix:
		if len(words) < len(r.prefix) {
			return false
		}
		for i, p := range r.prefix {
			if words[i].text != p {
				return false
			}
		}
		return true
	case ruleCommandGlob:
		return (r.bare != "" && joined == r.bare) || globMatch(r.glob, joined)
	}
	return false
}

// globMatch matches s against a pattern split at its '*' wildcards.
func globMatch(segs []string, s string) bool {
	if len(segs) == 1 {
		return s == segs[0]
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	s = s[len(segs[0]):]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return strings.HasSuffix(s, segs[len(segs)-1])
}

// joinWords joins a command's words with spaces for glob rules, quoting any
// word that is empty or holds whitespace so that 'git diff' x is not git diff x.
func joinWords(words []shellWord) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.text == "" || strings.ContainsAny(w.text, " \t\n\r\v\f") {
			b.WriteString("'" + strings.ReplaceAll(w.text, "'", `'\''`) + "'")
			continue
		}
		b.WriteString(w.text)
	}
	return b.String()
}

// matchPath reports whether a path rule matches a path, given relative to
// the root (slash form, "" when outside it) and absolute.
func (r *rule) matchPath(rel, abs string) bool {
	switch r.kind {
	case ruleAny:
		return true
	case rulePath:
		if r.absolute {
			return doublestar.MatchUnvalidated(r.pattern, filepath.ToSlash(abs))
		}
		return rel != "" && doublestar.MatchUnvalidated(r.pattern, rel)
	}
	return false
}

// names reports whether the rule spells out the protected directory dir
// as literal components (edit(.git/hooks/*) and bash(cat .git/HEAD) name
// .git; edit(**) does not).
func (r *rule) names(dir string) bool {
	want := [][]string{strings.Split(dir, "/")}
	switch r.kind {
	case rulePath:
		return protectedIn(strings.Split(r.pattern, "/"), want) != ""
	case ruleCommandGlob, ruleCommandPrefix:
		for _, w := range append(strings.Fields(strings.Join(r.glob, "*")), r.prefix...) {
			if mentionsProtected(w, want) != "" {
				return true
			}
		}
	}
	return false
}

// matchHost reports whether a domain rule matches the host of a URL.
func (r *rule) matchHost(host string) bool {
	switch r.kind {
	case ruleAny:
		return true
	case ruleDomain:
		return host != "" && (host == r.domain || strings.HasSuffix(host, "."+r.domain))
	}
	return false
}
