package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// longSession is a 10,000-step session played once through the loop in a
// 16k-token window (a tool output of 1.5 KB a step), with the size of each
// step's request as the model saw it.
var longSession = sync.OnceValues(func() ([]session.Entry, []int) {
	m := &stepModel{steps: 10_000, tool: "read"}
	log := &MemoryLog{}
	_, err := Run(context.Background(), Options{
		Model: m, Log: log, Gate: allowAll, System: "You are a test.",
		Tools:      tools.NewRegistry(&fakeTool{name: "read", readOnly: true, out: repeat("data line\n", 150)}),
		Compaction: CompactOptions{Window: llm.Window{Context: 16384, MaxOutput: 2048}},
	}, "read every file, again and again")
	if err != nil {
		panic(err)
	}
	sizes := make([]int, len(m.reqs))
	for i, r := range m.reqs {
		sizes[i] = requestBytes(r)
	}
	return log.Entries(), sizes
})

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

// requestBytes is the size of a request's JSON encoding.
func requestBytes(r llm.Request) int {
	b, _ := json.Marshal(struct {
		S string
		M []llm.Message
		T []llm.ToolSpec
	}{r.System, r.Messages, r.Tools})
	return len(b)
}

// upTo returns the entries written before the request that follows step
// n: its tool result, and a compaction if one came before that request.
func upTo(es []session.Entry, n int) []session.Entry {
	answers := 0
	for i, e := range es {
		if e.Type == session.TypeAssistant {
			if answers++; answers == n+1 {
				return es[:i]
			}
		}
	}
	return es
}

// BenchmarkCompactedSession measures, at steps 100, 1,000 and 10,000 of
// a session compacted as it went, the bytes of that step's request and the
// time a resume takes before its next request: opening the session in git
// from its last compaction on, rebuilding the context, sizing the request.
// Both stay flat once the session has been compacted.
func BenchmarkCompactedSession(b *testing.B) {
	es, sizes := longSession()
	for _, c := range []struct {
		n     int
		whole bool
	}{{100, false}, {1_000, false}, {10_000, false}, {10_000, true}} {
		n, whole := c.n, c.whole
		name := fmt.Sprintf("step=%d", n)
		if whole {
			name += "/read-whole" // for comparison: what a resume read before
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := session.OpenStore(dir, session.Env{Home: dir, Getenv: func(k string) string {
				if k == "DECODE_STORE" {
					return filepath.Join(dir, "store")
				}
				return ""
			}})
			if err != nil {
				b.Fatal(err)
			}
			s, err := st.Create(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			prefix := upTo(es, n)
			for i := 0; i < len(prefix); i += 1000 {
				batch := make([]session.Entry, 0, 1000)
				for _, e := range prefix[i:min(i+1000, len(prefix))] {
					batch = append(batch, session.Entry{Type: e.Type, Data: e.Data})
				}
				if err := s.Append(context.Background(), batch...); err != nil {
					b.Fatal(err)
				}
			}
			specs := tools.NewRegistry(&fakeTool{name: "read", readOnly: true}).Specs()
			var bytes int
			b.ResetTimer()
			open := st.OpenTail
			if whole {
				open = st.Open
			}
			for b.Loop() {
				t, err := open(context.Background(), s.ID())
				if err != nil {
					b.Fatal(err)
				}
				msgs, _ := history(t.Entries(), t.ID())
				bytes = requestBytes(llm.Request{System: "You are a test.", Messages: msgs, Tools: specs})
			}
			b.ReportMetric(float64(sizes[n]), "step-request-bytes")
			b.ReportMetric(float64(bytes), "resume-request-bytes")
		})
	}
}
