package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allowed lists, for each package of DESIGN.md §2, the project packages it
// may import. A provider subpackage of agent/llm is matched as "agent/llm/*".
var allowed = map[string][]string{
	".":           {"commands"},
	"commands":    {"agent", "agent/llm", "agent/llm/*", "tools", "session", "memory", "prompts"},
	"agent":       {"agent/llm", "tools", "session", "memory", "prompts"},
	"agent/llm":   {},
	"agent/llm/*": {"agent/llm"},
	"session":     {"agent/llm"},
	"tools":       {"agent/llm"},
	"memory":      {},
	"prompts":     {},
}

const module = "decode"

// TestLayering parses every Go file of the module, tests included, and fails
// on an import edge that DESIGN.md §2 forbids.
func TestLayering(t *testing.T) {
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
				continue
			}
			dir := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if dir == pkg || strings.HasPrefix(dir, pkg+"/") && rule != "agent" && rule != "agent/llm" {
				continue // a package and its own subfolders
			}
			target := layer(dir)
			assert.Contains(t, allow, target, "%s imports %s, which DESIGN.md §2 forbids for package %s", path, p, pkg)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, seen, 10, "the walk should have found the module's files")
}

// layer maps a package directory to its row in the table.
func layer(pkg string) string {
	if pkg == "" {
		return "."
	}
	if strings.HasPrefix(pkg, "agent/llm/") {
		return "agent/llm/*"
	}
	for _, top := range []string{"commands", "agent", "session", "tools", "memory", "prompts"} {
		if pkg == top || strings.HasPrefix(pkg, top+"/") && top != "agent" {
			return top
		}
	}
	return pkg
}

func TestLayerRules(t *testing.T) {
	assert.Equal(t, "agent/llm/*", layer("agent/llm/openai"))
	assert.Equal(t, "agent/llm", layer("agent/llm"))
	assert.Equal(t, "agent", layer("agent"))
	assert.Equal(t, ".", layer(""))
	assert.NotContains(t, allowed["agent"], "agent/llm/*", "the loop must never see provider packages")
}
