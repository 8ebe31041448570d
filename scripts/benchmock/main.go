// Command benchmock is the model scripts/bench runs decode against: a local
// OpenAI-compatible server that plays the bench task, streaming each answer
// as server-sent events the way the Chat Completions API does.
//
//	benchmock -addr 127.0.0.1:18611 -log requests.jsonl
//
// The bench task asks for out.txt to hold in.txt in upper case, then DONE.
// A request whose last message is the user's and names out.txt gets a bash
// tool call that writes it; any other request (the tool's result, a
// follow-up) gets "DONE". Each request is logged as one JSON line: its
// arrival time in Unix seconds (ts), its size (body_bytes) and how many
// tools it offered (n_tools), from which the bench measures launch to
// first request and tool turnaround.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18611", "listen on `HOST:PORT`")
	logPath := flag.String("log", "", "append one JSON line per request to `FILE`")
	flag.Parse()
	var logw io.Writer = io.Discard
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		logw = f
	}
	log.Fatal(http.ListenAndServe(*addr, newHandler(logw)))
}

// benchCommand is the shell command the tool call runs.
const benchCommand = "tr '[:lower:]' '[:upper:]' < in.txt > out.txt"

// request is what benchmock reads of a chat completion request.
type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// logLine is one request in the log.
type logLine struct {
	TS        float64 `json:"ts"`
	BodyBytes int     `json:"body_bytes"`
	NTools    int     `json:"n_tools"`
	Model     string  `json:"model"`
}

type handler struct {
	mu  sync.Mutex
	seq int
	log *json.Encoder
}

func newHandler(logw io.Writer) http.Handler {
	h := &handler{log: json.NewEncoder(logw)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", h.chat)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "benchmock serves only POST /v1/chat/completions, not "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "the request is not JSON: "+err.Error())
		return
	}
	h.mu.Lock()
	h.seq++
	id := fmt.Sprintf("chatcmpl-bench%d", h.seq)
	err = h.log.Encode(logLine{TS: float64(arrived.UnixNano()) / 1e9, BodyBytes: len(body), NTools: len(req.Tools), Model: req.Model})
	h.mu.Unlock()
	if err != nil {
		log.Printf("benchmock: log: %v", err)
	}
	c := completion{id: id, model: req.Model, created: arrived.Unix(), promptTokens: len(body) / 4}
	if wantsToolCall(req) {
		c.call = &toolCall{id: "call_" + id[len("chatcmpl-"):], name: "bash", args: mustJSON(map[string]string{"command": benchCommand})}
	} else {
		c.text = "DONE"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write(c.whole())
		return
	}
	c.stream(w, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
}

// wantsToolCall reports whether the request is the task's first turn: the
// last message is the user's and asks for out.txt.
func wantsToolCall(req request) bool {
	if len(req.Messages) == 0 {
		return false
	}
	last := req.Messages[len(req.Messages)-1]
	return last.Role == "user" && strings.Contains(string(last.Content), "out.txt")
}

type toolCall struct{ id, name, args string }

// completion is one answer: text, or a tool call.
type completion struct {
	id, model    string
	created      int64
	promptTokens int
	text         string
	call         *toolCall
}

func (c completion) usage() map[string]int {
	return map[string]int{"prompt_tokens": c.promptTokens, "completion_tokens": 12, "total_tokens": c.promptTokens + 12}
}

func (c completion) chunk(choices []any) map[string]any {
	return map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model, "choices": choices}
}

func choice(delta map[string]any, finish any) []any {
	return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
}

// stream writes the answer as the API streams it: the role first; text in
// pieces, or the tool call's id and name with empty arguments and then its
// arguments in pieces; a chunk with the finish reason; the usage in a chunk
// with no choices when asked for; then [DONE].
func (c completion) stream(w http.ResponseWriter, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(v))
		if flusher != nil {
			flusher.Flush()
		}
	}
	finish := "stop"
	if c.call != nil {
		finish = "tool_calls"
		send(c.chunk(choice(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": c.call.id, "type": "function",
			"function": map[string]any{"name": c.call.name, "arguments": ""}}}}, nil)))
		for _, piece := range pieces(c.call.args, 3) {
			send(c.chunk(choice(map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "function": map[string]any{"arguments": piece}}}}, nil)))
		}
	} else {
		send(c.chunk(choice(map[string]any{"role": "assistant", "content": ""}, nil)))
		for _, piece := range pieces(c.text, 2) {
			send(c.chunk(choice(map[string]any{"content": piece}, nil)))
		}
	}
	send(c.chunk(choice(map[string]any{}, finish)))
	if includeUsage {
		u := c.chunk([]any{})
		u["usage"] = c.usage()
		send(u)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// whole is the answer as one chat.completion object (a request without stream).
func (c completion) whole() []byte {
	msg := map[string]any{"role": "assistant", "content": c.text}
	finish := "stop"
	if c.call != nil {
		finish = "tool_calls"
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": c.call.id, "type": "function",
			"function": map[string]any{"name": c.call.name, "arguments": c.call.args}}}
	}
	return []byte(mustJSON(map[string]any{"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": c.usage()}))
}

// pieces splits s into n parts of about equal length (fewer when s is short).
func pieces(s string, n int) []string {
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > 0 {
		k := min(size, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintln(w, mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}}))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
