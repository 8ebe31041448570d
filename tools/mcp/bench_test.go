package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"decode/tools"
)

// BenchmarkStartThreeServers measures starting three stdio servers in
// parallel (process start, initialize, tools/list) and stopping them.
func BenchmarkStartThreeServers(b *testing.B) {
	servers := []Server{stdioServer("a", "ok"), stdioServer("b", "ok"), stdioServer("c", "ok")}
	for b.Loop() {
		m := NewManager(servers, Options{Env: os.Environ()})
		if errs := m.Start(context.Background()); len(errs) > 0 {
			b.Fatal(errs)
		}
		m.Close()
	}
}

// BenchmarkFirstRequestToolBytes reports the bytes of MCP tool definitions
// in the first request with 50 MCP tools: all of them, or the mcp_search
// tool that stands in for them past the budget.
func BenchmarkFirstRequestToolBytes(b *testing.B) {
	s := stdioServer("inv", "ok")
	s.Env["MCPTEST_EXTRA"] = "42"
	m := NewManager([]Server{s}, Options{Env: os.Environ()})
	defer m.Close()
	if errs := m.Start(context.Background()); len(errs) > 0 {
		b.Fatal(errs)
	}
	ts := m.Tools()
	if len(ts) != 50 {
		b.Fatalf("want 50 tools, got %d", len(ts))
	}
	size := func(reg *tools.Registry) int {
		js, _ := json.Marshal(reg.Specs())
		return len(js)
	}
	for _, withSearch := range []bool{false, true} {
		b.Run(fmt.Sprintf("search=%v", withSearch), func(b *testing.B) {
			var n int
			for b.Loop() {
				var reg *tools.Registry
				if withSearch {
					reg = tools.NewRegistry(NewSearch(ts, func(...string) {}))
					reg.Defer(ts...)
				} else {
					reg = tools.NewRegistry(ts...)
				}
				n = size(reg)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
