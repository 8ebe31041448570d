package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"decode/agent/llm"
)

// longAnswer is an SSE stream of one text block of size bytes, in deltas
// of 100 bytes, as a model writing a long answer sends it.
func longAnswer(size int) []byte {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	chunk := strings.Repeat("abcdefghi ", 10)
	for n := 0; n < size; n += len(chunk) {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", chunk)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

// BenchmarkLongAnswer streams answers of 1 and 10 MB from a local server.
// The time per byte stays flat from 1 to 10 MB (the SDK's accumulator,
// which appends each delta to a string, took 27.6 s for 10 MB); compare
// with the same benchmark of the openai adapter.
func BenchmarkLongAnswer(b *testing.B) {
	for _, mb := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			body := longAnswer(mb << 20)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer srv.Close()
			m, err := New(Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-sonnet-4-5", HTTPClient: llm.HTTPClient()})
			if err != nil {
				b.Fatal(err)
			}
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "write a lot"}}}
			b.SetBytes(int64(mb << 20))
			b.ReportAllocs()
			for b.Loop() {
				var got *llm.Response
				for ev := range m.Stream(context.Background(), req) {
					if ev.Kind == llm.EventError {
						b.Fatal(ev.Err)
					}
					if ev.Kind == llm.EventDone {
						got = ev.Response
					}
				}
				if got == nil || len(got.Message.Text) < mb<<20 {
					b.Fatalf("the answer is incomplete")
				}
			}
		})
	}
}
