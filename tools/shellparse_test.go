package tools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testProtected = [][]string{{".git"}, {".decode"}}

// unitTexts lists the commands analyzeShell found, as joined words.
func unitTexts(t *testing.T, line string) []string {
	t.Helper()
	an := analyzeShell(line, testProtected)
	require.NoError(t, an.err, line)
	var out []string
	for _, u := range an.cmds {
		out = append(out, joinWords(u.words))
	}
	return out
}

func TestAnalyzeShellFindsEveryCommand(t *testing.T) {
	for line, want := range map[string][]string{
		"a; b && c || d | e & f":                {"a", "b", "c", "d", "e", "f"},
		"a $(b `c`) <(d) >(e)":                  {"a '$(b `c`)' <(d) >(e)", "b `c`", "c", "d", "e"},
		"f() { g; }; if h; then i; fi":          {"g", "h", "i"},
		"x=$(a) b=1; for i in $(c); do d; done": {"a", "c", "d"},
		"cat <<EOF\n$(a)\nEOF":                  {"cat", "a"},
		"sudo -u me timeout 5 nice -n1 a b":     {"sudo -u me timeout 5 nice -n1 a b", "timeout 5 nice -n1 a b", "nice -n1 a b", "a b"},
		"bash -c 'a; b'":                        {"bash -c 'a; b'", "a", "b"},
		"eval 'a' b":                            {"eval a b", "a b"},
		"xargs -n1 a":                           {"xargs -n1 a", "a {xargs-input}"},
		"xargs -I{} a {}":                       {"xargs -I{} a {}", "a {}"},
		"find . -exec a {} \\; -ok b +":         {"find . -exec a {} ; -ok b +", "a {}", "b"},
		"'a b' c":                               {"'a b' c"},
		"export A=1 B":                          {"export A=1 B"},
		"echo ${x:-$(a)} $((1 + $(b)))":         {"echo ${x:-$(a)} '$((1 + $(b)))'", "a", "b"},
	} {
		assert.Equal(t, want, unitTexts(t, line), line)
	}
}

func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		src, text string
		literal   bool
	}{
		{"rm", "rm", true},
		{"r''m", "rm", true},
		{`"rm"`, "rm", true},
		{`\rm`, "rm", true},
		{`$'\x72\155'`, "rm", true},
		{`$'\u00e9\t'`, "é\t", true},
		{`$'\cA'`, "\x01", true},
		{`$'a\0b'`, `$'a\0b'`, false},
		{`"a\"b\$c\\d\e"`, `a"b$c\d\e`, true},
		{`a\ b`, "a b", true},
		{"$x", "$x", false},
		{`"$x/y"`, "$x/y", false},
		{"*.go", "*.go", false},
		{`\*.go`, "*.go", true},
		{"'*.go'", "*.go", true},
		{"a[bc]", "a[bc]", false},
		{"[", "[", true},
		{"{a,b}", "{a,b}", false},
		{"{}", "{}", true},
		{"{1..3}", "{1..3}", false},
		{"a{b}c", "a{b}c", true},
		{"~/x", "~/x", false},
		{"x~", "x~", true},
		{"@(a|b)", "@(a|b)", false},
		{`$"msg"`, "msg", false},
	} {
		an := &shellAnalyzer{protected: testProtected}
		an.parse("cmd "+c.src, 0)
		require.NoError(t, an.out.err, c.src)
		require.Len(t, an.out.cmds, 1, c.src)
		w := an.out.cmds[0].words[1]
		assert.Equal(t, c.text, w.text, c.src)
		assert.Equal(t, c.literal, w.literal, c.src)
	}
}

func TestAnalyzeShellWrites(t *testing.T) {
	for line, want := range map[string][]string{
		"a > x >> y 2> z &> w &>> v >| u <> t": {"x", "y", "z", "w", "v", "u", "t"},
		"a >&2 2>&1 >&- < in <<< s >/dev/null": nil,
		"a >&file":                             {"file"},
		"a > >(b)":                             nil,
		"> x; { a; } > y; (b) > z":             {"x", "y", "z"},
		"a > $f":                               {"$f"},
		"/usr/bin/time -o out a":               {"out"},
	} {
		var got []string
		for _, w := range analyzeShell(line, testProtected).writes {
			got = append(got, w.target.text)
		}
		assert.Equal(t, want, got, line)
	}
}

func TestAnalyzeShellFloors(t *testing.T) {
	for line, want := range map[string]string{
		"PATH=/x a":           "sets PATH",
		"a=1 GIT_DIR=x b":     "sets GIT_DIR",
		"env LD_PRELOAD=x a":  "sets LD_PRELOAD",
		"export IFS=x":        "sets IFS",
		"read -r BASH_ENV":    "sets BASH_ENV",
		"$x a":                "only known at run time",
		"a ${!x}":             "indirect",
		"a $((i+1))":          "arithmetic",
		"sudo a":              "raised privileges",
		"xargs a":             "run time",
		"bash -c \"$x\"":      "only known at run time",
		"eval \"$x\"":         "only known at run time",
		"env -S 'a b'":        "env -S",
		"timeout --bogus 1 a": "cannot tell",
		"cp a .git/hooks/x":   ".git",
		"declare -n r=PATH":   "-n",
	} {
		an := analyzeShell(line, testProtected)
		require.NoError(t, an.err, line)
		var reasons []string
		for _, f := range an.floors {
			reasons = append(reasons, f.reason)
		}
		for _, u := range an.cmds {
			for _, f := range u.floors {
				reasons = append(reasons, f.reason)
			}
			reasons = append(reasons, u.wrapperFloor)
		}
		assert.Contains(t, strings.Join(reasons, "|"), want, line)
	}
	for _, line := range []string{"a b c", "CGO_ENABLED=0 a", "env FOO=1 a", "a $((1+2))", "export A=1", "timeout 5 a"} {
		an := analyzeShell(line, testProtected)
		for _, u := range an.cmds {
			assert.Empty(t, u.floors, line)
		}
		assert.Empty(t, an.floors, line)
	}
}

func TestAnalyzeShellLimits(t *testing.T) {
	an := analyzeShell("echo 'a", testProtected)
	assert.Error(t, an.err)
	an = analyzeShell("bash -c 'echo \"a'", testProtected)
	assert.ErrorContains(t, an.err, "nested script")
	an = analyzeShell("a\x00b", testProtected)
	assert.ErrorContains(t, an.err, "NUL")
	an = analyzeShell(strings.Repeat("a;", maxShellUnits+5), testProtected)
	assert.True(t, an.capped)
	assert.Len(t, an.cmds, maxShellUnits)
}

func TestMentionsProtected(t *testing.T) {
	for text, want := range map[string]string{
		".git":                  ".git",
		".git/hooks/x":          ".git",
		"a/.GIT/x":              ".git",
		"--git-dir=.git":        ".git",
		"-o.git/hooks/x":        ".git",
		"x:.decode/config.toml": ".decode",
		"repo.git":              "",
		".gitignore":            "",
		".github/workflows":     "",
		"https://x.org/r.git":   "",
		"decode":                "",
	} {
		assert.Equal(t, want, mentionsProtected(text, testProtected), text)
	}
}
