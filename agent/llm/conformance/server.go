package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Server is a local server that answers each request with the next queued
// Reply and counts requests on its side, so attempt counts are what went
// over the wire, not what the client says it sent.
type Server struct {
	// URL is http://127.0.0.1:PORT, without a path.
	URL string

	t    testing.TB
	dir  string
	path string
	srv  *httptest.Server

	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// Request is what the server received.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// NewServer starts a server serving files from dir; every request must use
// path. It stops when the test ends.
func NewServer(t testing.TB, dir, path string) *Server {
	s := &Server{t: t, dir: dir, path: path}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Queue adds replies for the coming requests, in order.
func (s *Server) Queue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep *Reply
	if len(s.replies) > 0 {
		rep = &s.replies[0]
		s.replies = s.replies[1:]
	}
	s.mu.Unlock()

	if r.URL.Path != s.path {
		s.t.Errorf("request to %s, want %s", r.URL.Path, s.path)
	}
	if rep == nil {
		s.t.Errorf("%v (request %d)", errNoReply, len(s.Requests()))
		http.Error(w, errNoReply.Error(), http.StatusTeapot)
		return
	}
	if rep.Stall != "" {
		if rep.Stall == "half" {
			b, err := os.ReadFile(filepath.Join(s.dir, rep.File))
			if err != nil {
				s.t.Errorf("conformance server: %v", err)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.Write(firstHalf(b))
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // silent until the client gives up
		return
	}
	if err := s.write(w, *rep); err != nil {
		s.t.Errorf("conformance server: %v", err)
	}
}

// write sends one reply.
func (s *Server) write(w http.ResponseWriter, rep Reply) error {
	var payload []byte
	if rep.File != "" {
		b, err := os.ReadFile(filepath.Join(s.dir, rep.File))
		if err != nil {
			return err
		}
		payload = b
	}
	if rep.Reset {
		return reset(w, firstHalf(payload))
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.File != "" {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		payload = []byte(rep.Body)
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if !rep.Trickle {
		_, err := w.Write(payload)
		return err
	}
	for i := 0; i < len(payload); i += 7 {
		if _, err := w.Write(payload[i:min(i+7, len(payload))]); err != nil {
			return err
		}
		w.(http.Flusher).Flush()
	}
	return nil
}

// reset answers 200 with part of an event stream and then resets the
// connection (an RST, not a clean close), as a broken network does.
func reset(w http.ResponseWriter, partial []byte) error {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	writeChunked(buf, partial)
	if err := buf.Flush(); err != nil {
		return err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	return nil
}

func writeChunked(buf *bufio.ReadWriter, data []byte) {
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	_, _ = fmt.Fprintf(buf, "%x\r\n", len(data))
	_, _ = buf.Write(data)
	_, _ = buf.WriteString("\r\n")
}

// firstHalf returns the first half of an event stream's events (rounded
// up), whole events only.
func firstHalf(stream []byte) []byte {
	sep := []byte("\n\n")
	if bytes.Contains(stream, []byte("\r\n\r\n")) {
		sep = []byte("\r\n\r\n")
	}
	events := bytes.SplitAfter(stream, sep)
	if n := len(events); n > 0 && len(bytes.TrimSpace(events[n-1])) == 0 {
		events = events[:n-1]
	}
	return bytes.Join(events[:(len(events)+1)/2], nil)
}
