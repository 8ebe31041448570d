package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"bash":                     "bash",
		"bash(go test *)":          "bash(go test *)",
		" bash( go   test  * ) ":   "bash(go test *)",
		"bash(git diff:*)":         "bash(git diff:*)",
		"edit(./src/**)":           "edit(src/**)",
		"read(/etc/**)":            "read(/etc/**)",
		"web_fetch(domain:Go.Dev)": "web_fetch(domain:go.dev)",
		"web_fetch(domain:*.x.io)": "web_fetch(domain:x.io)",
		"mcp__github__list":        "mcp__github__list",
	} {
		r, err := parseRule(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, r.text, in)
	}
	for in, want := range map[string]string{
		"":                      "not a tool name",
		"bash(":                 "closing parenthesis",
		"bash()":                "empty specifier",
		"bash(:*)":              "no command",
		"bash(go test; rm *)":   "one simple command",
		"bash(a && b)":          "one simple command",
		"bash(a | b)":           "one simple command",
		"bash($(x) *)":          "one simple command",
		"edit(../x)":            "..",
		"edit(~/x)":             "absolute",
		"edit([)":               "not a valid path pattern",
		"web_fetch(go.dev)":     "domain:",
		"web_fetch(domain:a/b)": "not a host",
		"todo(x)":               "takes no specifier",
		"ba sh":                 "not a tool name",
	} {
		_, err := parseRule(in)
		assert.ErrorContains(t, err, want, in)
		if err != nil {
			assert.Contains(t, err.Error(), "rule", in)
		}
	}
}

func litWords(ws ...string) []shellWord {
	out := make([]shellWord, len(ws))
	for i, w := range ws {
		out[i] = shellWord{text: w, literal: true}
	}
	return out
}

func TestRuleMatchCommand(t *testing.T) {
	for _, c := range []struct {
		rule  string
		words []string
		want  bool
	}{
		{"bash(go test *)", []string{"go", "test"}, true},
		{"bash(go test *)", []string{"go", "test", "./..."}, true},
		{"bash(go test *)", []string{"go", "testify"}, false},
		{"bash(go test *)", []string{"go", "vet"}, false},
		{"bash(go test *)", []string{"go test", "x"}, false},
		{"bash(go * -v)", []string{"go", "test", "./...", "-v"}, true},
		{"bash(go * -v)", []string{"go", "test", "-v", "x"}, false},
		{"bash(*)", []string{"anything"}, true},
		{"bash(git status)", []string{"git", "status"}, true},
		{"bash(git status)", []string{"git", "status", "-s"}, false},
		{"bash(git diff:*)", []string{"git", "diff"}, true},
		{"bash(git diff:*)", []string{"git", "diff", "--stat"}, true},
		{"bash(git diff:*)", []string{"git", "diff-tree"}, false},
		{"bash(git diff:*)", []string{"git"}, false},
		{"bash", []string{"x"}, true},
		{"bash(echo *)", []string{"echo", ""}, true},
		{"bash(echo a b)", []string{"echo", "a b"}, false},
	} {
		r, err := parseRule(c.rule)
		require.NoError(t, err)
		w := litWords(c.words...)
		assert.Equal(t, c.want, r.matchCommand(w, joinWords(w)), "%s vs %q", c.rule, c.words)
	}
}

func TestRuleNamesAndCovers(t *testing.T) {
	mustRule := func(s string) *rule {
		r, err := parseRule(s)
		require.NoError(t, err)
		return &r
	}
	assert.True(t, mustRule("edit(.git/hooks/*)").names(".git"))
	assert.True(t, mustRule("edit(a/.GIT/**)").names(".git"))
	assert.False(t, mustRule("edit(**)").names(".git"))
	assert.False(t, mustRule("edit(.g*/**)").names(".git"))
	assert.True(t, mustRule("bash(cat .git/HEAD)").names(".git"))
	assert.False(t, mustRule("bash(cat *)").names(".git"))
	edit := mustRule("edit(x)")
	assert.True(t, edit.covers("edit") && edit.covers("write") && edit.covers("multi_edit"))
	assert.False(t, edit.covers("read"))
	read := mustRule("read(x)")
	assert.True(t, read.covers("grep") && read.covers("glob") && read.covers("read"))
	assert.False(t, mustRule("write(x)").covers("edit"))
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"a*b*c", "abc", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false},
		{"*", "", true}, {"a*a", "a", false}, {"a*a", "aa", true}, {"ab", "ab", true}, {"ab", "abc", false},
	} {
		assert.Equal(t, c.want, globMatch(splitStar(c.pattern), c.s), "%s vs %s", c.pattern, c.s)
	}
}

func splitStar(p string) []string {
	r, _ := parseRule("bash(" + p + ")")
	return r.glob
}
