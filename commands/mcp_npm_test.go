package commands

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMCPNPMServers runs decode against the real MCP servers from npm
// (@modelcontextprotocol/server-everything and server-filesystem), which
// .ci/run installs and names in DECODE_TEST_MCP_NPM (their node_modules/.bin).
func TestMCPNPMServers(t *testing.T) {
	dir := os.Getenv("DECODE_TEST_MCP_NPM")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("DECODE_TEST_MCP_NPM is not set: .ci/run installs the npm MCP servers and sets it")
		}
		t.Skip("DECODE_TEST_MCP_NPM is not set (bash .ci/run installs the npm MCP servers)")
	}
	for _, bin := range []string{"mcp-server-everything", "mcp-server-filesystem"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			t.Fatalf("%s is missing from DECODE_TEST_MCP_NPM=%s: %v", bin, dir, err)
		}
	}
	p := scriptParams("testdata/mcp_npm")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		env.Setenv("MCP_NPM", dir)
		return setup(env)
	}
	testscript.Run(t, p)
}
