package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allowed lists, for each package of DESIGN.md §2, the project packages it
// may import. A provider subpackage of agent/llm is matched as "agent/llm/*";
// agent/llm/providers, the registry that builds every adapter, is the one
// subpackage of agent/llm that may import its siblings.
var allowed = map[string][]string{
	".":                   {"commands"},
	"commands":            {"agent", "agent/llm", "agent/llm/*", "agent/llm/providers", "tools", "session", "memory", "prompts", "secrets"},
	"agent":               {"agent/llm", "tools", "session", "memory", "prompts", "secrets"},
	"agent/llm":           {"secrets"},
	"agent/llm/*":         {"agent/llm", "secrets"},
	"agent/llm/providers": {"agent/llm", "agent/llm/*", "secrets"},
	"session":             {"agent/llm", "secrets"},
	"tools":               {"agent/llm", "secrets"},
	"memory":              {"secrets"},
	"prompts":             {},
	// secrets (confined reads, the one redactor) is a leaf every layer uses.
	"secrets": {},
	// decode-keyring, the one program linking github.com/99designs/keyring.
	"cmd/decode-keyring": {},
	// scripts/bench's mock model, a program of its own (standard library).
	"scripts/benchmock": {},
}

// thirdParty confines libraries to the layers that may use them: the CLI
// framework to commands and main, each provider's SDK to its adapter. A
// module not listed may be imported anywhere the layering allows.
var thirdParty = map[string][]string{
	"github.com/urfave/cli/v2":                  {".", "commands"},
	"github.com/sashabaranov/go-openai":         {"agent/llm/openai"},
	"google.golang.org/genai":                   {"agent/llm/gemini"},
	"github.com/anthropics/anthropic-sdk-go/v2": {"agent/llm/anthropic"},
	// Its package init dials the session bus (or runs dbus-launch): never
	// in decode itself.
	"github.com/99designs/keyring": {"cmd/decode-keyring"},
}

// modulePath reads the module path from go.mod.
func modulePath(t *testing.T) string {
	data, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// TestLayering parses every Go file of the module, tests included, and fails
// on an import edge that DESIGN.md §2 forbids.
func TestLayering(t *testing.T) {
	module := modulePath(t)
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		rule := layer(pkg)
		allow, ok := allowed[rule]
		if !assert.True(t, ok, "package %s is not in DESIGN.md §2's table; add it there and here", pkg) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		seen++
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p != module && !strings.HasPrefix(p, module+"/") {
				if msg := checkThirdParty(path, pkg, p); msg != "" {
					t.Error(msg)
				}
				continue
			}
			dir := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if ownSubpackage(pkg, dir) {
				continue
			}
			if rule == "tools" && strings.HasPrefix(pkg, dir+"/") {
				continue // a capability subpackage of tools/ (tools/mcp) builds on the Tool interface
			}
			if pkg == "session/storetest" && dir == "session" {
				continue // the store conformance suite tests session's interface
			}
			target := layer(dir)
			assert.Contains(t, allow, target, "%s imports %s, which DESIGN.md §2 forbids for package %s", path, p, pkg)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, seen, 10, "the walk should have found the module's files")
}

// ownSubpackage reports whether dir is pkg itself or one of its own
// subfolders, which a layer may use freely. agent and agent/llm are the
// exceptions: their subpackages are layers of their own (the providers).
func ownSubpackage(pkg, dir string) bool {
	if dir == pkg {
		return true
	}
	return strings.HasPrefix(dir, pkg+"/") && pkg != "agent" && pkg != "agent/llm" && pkg != ""
}

// checkThirdParty says what is wrong when file (of package pkg) imports a
// library confined to other layers, and returns "" otherwise.
func checkThirdParty(file, pkg, imp string) string {
	for mod, where := range thirdParty {
		if imp != mod && !strings.HasPrefix(imp, mod+"/") {
			continue
		}
		ok := false
		for _, w := range where {
			if layer(pkg) == w || pkg == w || w != "." && strings.HasPrefix(pkg, w+"/") {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("%s imports %s, which only %v may use", file, imp, where)
		}
	}
	return ""
}

// layer maps a package directory to its row in the table.
func layer(pkg string) string {
	if pkg == "" || pkg == "." {
		return "."
	}
	if pkg == "agent/llm/providers" {
		return pkg
	}
	if strings.HasPrefix(pkg, "agent/llm/") {
		return "agent/llm/*"
	}
	for _, top := range []string{"commands", "agent", "session", "tools", "memory", "prompts", "secrets"} {
		if pkg == top || strings.HasPrefix(pkg, top+"/") && top != "agent" {
			return top
		}
	}
	return pkg
}

func TestLayerRules(t *testing.T) {
	assert.Equal(t, "agent/llm/*", layer("agent/llm/openai"))
	assert.Equal(t, "agent/llm/providers", layer("agent/llm/providers"))
	assert.Equal(t, "agent/llm", layer("agent/llm"))
	assert.Equal(t, "agent", layer("agent"))
	assert.Equal(t, ".", layer(""))
	assert.Equal(t, "tools", layer("tools/sandbox"), "a subpackage of tools is in the tools layer")
	assert.NotContains(t, allowed["agent"], "agent/llm/*", "the loop must never see provider packages")
	assert.NotContains(t, allowed["agent"], "agent/llm/providers", "nor the registry that builds them")
	assert.False(t, ownSubpackage("agent", "agent/llm/openai"), "agent's subpackages are layers of their own")
	assert.True(t, ownSubpackage("tools", "tools/sandbox"))
}

// TestThirdPartyRules checks that the confinement of libraries can fail.
func TestThirdPartyRules(t *testing.T) {
	assert.NotEmpty(t, checkThirdParty("agent/agent.go", "agent", "github.com/urfave/cli/v2"), "urfave/cli outside commands")
	assert.NotEmpty(t, checkThirdParty("agent/llm/gemini/x.go", "agent/llm/gemini", "github.com/sashabaranov/go-openai"), "the OpenAI SDK outside its adapter")
	assert.NotEmpty(t, checkThirdParty("agent/llm/providers/x.go", "agent/llm/providers", "google.golang.org/genai"), "genai in the registry")
	assert.Empty(t, checkThirdParty("agent/llm/openai/x.go", "agent/llm/openai", "github.com/sashabaranov/go-openai"))
	assert.Empty(t, checkThirdParty("commands/main.go", "commands", "github.com/urfave/cli/v2"))
	assert.Empty(t, checkThirdParty("main.go", "", "github.com/urfave/cli/v2"))
	assert.Empty(t, checkThirdParty("session/x.go", "session", "github.com/go-git/go-git/v5"), "unlisted libraries are free")
}

// TestDecodeDoesNotLinkKeyring keeps github.com/99designs/keyring out of
// the decode binary: its package init dials the session bus, or runs
// dbus-launch, at every start. cmd/decode-keyring links it instead.
func TestDecodeDoesNotLinkKeyring(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(pkg, "github.com/99designs/keyring") || strings.HasPrefix(pkg, "github.com/godbus/dbus"),
			"decode links %s; only cmd/decode-keyring may", pkg)
	}
}
