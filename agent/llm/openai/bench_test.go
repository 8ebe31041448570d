package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"decode/agent/llm"
	"decode/agent/llm/openai"
)

// longAnswer is a chat completions stream of size bytes of text, in deltas
// of 100 bytes.
func longAnswer(size int) []byte {
	var b strings.Builder
	chunk := strings.Repeat("abcdefghi ", 10)
	for n := 0; n < size; n += len(chunk) {
		fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", chunk)
	}
	b.WriteString("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkLongAnswer streams answers of 1 and 10 MB from a local server,
// the reference the anthropic adapter's benchmark of the same name is
// compared with.
func BenchmarkLongAnswer(b *testing.B) {
	for _, mb := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			body := longAnswer(mb << 20)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer srv.Close()
			m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-4.1-mini", Provider: "openai", HTTPClient: llm.HTTPClient()})
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
