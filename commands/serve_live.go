package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"decode/session"
)

// Live streams poll refs, never the model or the process: reading one
// loose ref file (or packed-refs) is a few microseconds, and a ref moves
// exactly when entries are committed.
const (
	refPoll   = 200 * time.Millisecond
	listPoll  = 500 * time.Millisecond // two stat calls; Tips only when they moved
	listFull  = 10 * time.Second
	heartbeat = 15 * time.Second
)

// sseStart answers with the headers of an event stream, or false when w
// cannot stream.
func sseStart(w http.ResponseWriter) (http.Flusher, bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "retry: 1000\n\n")
	fl.Flush()
	return fl, true
}

// sseEvent writes one event; id is omitted when empty, so that it does not
// move the client's Last-Event-ID.
func sseEvent(w io.Writer, id, event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", event, data)
	_, err = w.Write(b.Bytes())
	return err
}

// sessionEvents streams a session's entries as they are committed: first
// those after the client's Last-Event-ID (or from ?from=N on, default all),
// then each new one, each as an "entry" event whose id is the entry's; a
// "session" event (summary and what it waits for) follows every batch.
func (s *server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	id, err := s.st.Resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	after := 0
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			httpError(w, http.StatusBadRequest, "Last-Event-ID %q: want an entry id", v)
			return
		}
		after = n
	} else if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "from=%q: want an entry id (1 or more)", v)
			return
		}
		after = n - 1
	}
	fl, ok := sseStart(w)
	if !ok {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(refPoll)
	defer tick.Stop()
	lastTip, lastBeat := "-", time.Now()
	for {
		tip, err := s.st.TipOf(id)
		if err == nil && tip != lastTip {
			if after, err = s.sendEntries(ctx, w, id, after); err != nil {
				return
			}
			lastTip = tip
			fl.Flush()
		}
		if time.Since(lastBeat) > heartbeat {
			io.WriteString(w, ": keep-alive\n\n")
			fl.Flush()
			lastBeat = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sendEntries writes the entries of session id after entry "after", then
// its summary; it returns the last entry id sent.
func (s *server) sendEntries(ctx context.Context, w io.Writer, id string, after int) (int, error) {
	sess, err := s.st.Open(ctx, id)
	if err != nil {
		return after, err
	}
	for _, e := range sess.Entries() {
		if e.ID <= after {
			continue
		}
		if err := sseEvent(w, strconv.Itoa(e.ID), "entry", e); err != nil {
			return after, err
		}
		after = e.ID
	}
	return after, sseEvent(w, "", "session", sessionSummary(sess))
}

// listEvents streams the session list: a "session" event for every
// session when it starts, then one each time a session appears (created,
// forked or fetched from a remote) or moves.
func (s *server) listEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := sseStart(w)
	if !ok {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(listPoll)
	defer tick.Stop()
	seen := map[string]string{}
	lastBeat, lastStamp, lastFull := time.Now(), "", time.Now()
	for {
		var tips map[string]string
		var err error
		// File times are as coarse as the kernel's clock tick: two updates
		// within one tick leave one stamp, so the refs are read anyway
		// every listFull.
		if stamp := s.st.RefsStamp(); stamp != lastStamp || time.Since(lastFull) > listFull {
			lastStamp, lastFull = stamp, time.Now()
			tips, err = s.st.Tips(ctx)
		}
		if err == nil && tips != nil && changed(seen, tips) {
			infos, err := s.st.List(ctx)
			if err != nil {
				return
			}
			for _, in := range infos {
				if in.BrokenRef || seen[in.ID] == tips[in.ID] {
					continue
				}
				if err := sseEvent(w, "", "session", listJSON([]session.Info{in})[0]); err != nil {
					return
				}
			}
			for id := range seen {
				if _, ok := tips[id]; !ok {
					if err := sseEvent(w, "", "removed", map[string]string{"id": id}); err != nil {
						return
					}
				}
			}
			seen = tips
			fl.Flush()
		}
		if time.Since(lastBeat) > heartbeat {
			io.WriteString(w, ": keep-alive\n\n")
			fl.Flush()
			lastBeat = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func changed(a, b map[string]string) bool {
	if len(a) != len(b) {
		return true
	}
	for k, v := range b {
		if a[k] != v {
			return true
		}
	}
	return false
}

// actionBody is the JSON body of an action; each action reads its fields.
type actionBody struct {
	Call     string `json:"call"`
	Reason   string `json:"reason"`
	Text     string `json:"text"`
	Message  string `json:"message"`
	FollowUp bool   `json:"follow_up"`
	Prompt   string `json:"prompt"`
}

// actionTimeout bounds approve, deny, answer and steer, which only append
// an entry or queue a message.
const actionTimeout = time.Minute

// apiAction runs the decode command an action stands for, as a subprocess
// of the same binary, so that its entries are the CLI's own.
func (s *server) apiAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	var body actionBody
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
			httpError(w, http.StatusBadRequest, "the body must be a JSON object: %v", err)
			return
		}
	}
	id, err := s.st.Resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		storeError(w, err)
		return
	}
	args, err := actionArgs(action, id, body)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	if action == "resume" {
		s.resume(w, args)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.cfg.Exe, args...)
	cmd.Dir, cmd.Env = s.cfg.Dir, s.cfg.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res := map[string]any{"command": append([]string{"decode"}, args...), "exit": exitOf(err), "stdout": stdout.String(), "stderr": stderr.String()}
	if err != nil {
		res["error"] = failureLine(stderr.String(), err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(res)
		return
	}
	writeAPI(w, res)
}

// actionArgs is the decode command line of an action on session id.
// Positional arguments follow "--", so a message starting with a dash
// stays a message.
func actionArgs(action, id string, b actionBody) ([]string, error) {
	withCall := func(args ...string) []string {
		if b.Call != "" {
			args = append(args, b.Call)
		}
		return args
	}
	switch action {
	case "approve":
		return append([]string{"approve", "--"}, withCall(id)...), nil
	case "deny":
		args := withCall(id)
		if b.Reason != "" {
			args = append(args, b.Reason)
		}
		return append([]string{"deny", "--"}, args...), nil
	case "answer":
		if strings.TrimSpace(b.Text) == "" {
			return nil, errors.New("answer needs a text: {\"text\": \"...\"}")
		}
		return append([]string{"answer", "--"}, append(withCall(id), b.Text)...), nil
	case "steer":
		if strings.TrimSpace(b.Message) == "" {
			return nil, errors.New("steer needs a message: {\"message\": \"...\"}")
		}
		args := []string{"steer"}
		if b.FollowUp {
			args = append(args, "--follow-up")
		}
		return append(args, "--", id, b.Message), nil
	case "resume":
		args := []string{"resume", "--", id}
		if b.Prompt != "" {
			args = append(args, b.Prompt)
		}
		return args, nil
	}
	return nil, fmt.Errorf("unknown action %q: approve, deny, answer, steer or resume", action)
}

// resumeGrace is how long resume waits to report a run that fails at once
// (a session another process runs, say) before answering that it started.
const resumeGrace = 1500 * time.Millisecond

// resume starts decode resume and answers 202 once it runs; the run goes
// on after the request, followed through the session's stream.
func (s *server) resume(w http.ResponseWriter, args []string) {
	cmd := exec.Command(s.cfg.Exe, args...)
	cmd.Dir, cmd.Env = s.cfg.Dir, s.cfg.Env
	var stderr cappedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		httpError(w, http.StatusInternalServerError, "start decode resume: %v", err)
		return
	}
	s.runs.Add(1)
	done := make(chan error, 1)
	go func() {
		defer s.runs.Done()
		done <- cmd.Wait()
	}()
	res := map[string]any{"command": append([]string{"decode"}, args...), "pid": cmd.Process.Pid}
	select {
	case err := <-done:
		res["exit"] = exitOf(err)
		res["stderr"] = stderr.String()
		if code := exitOf(err); code != 0 && code != session.ExitPaused {
			res["error"] = failureLine(stderr.String(), err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(res)
			return
		}
		writeAPI(w, res)
	case <-time.After(resumeGrace):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(res)
	}
}

func exitOf(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// failureLine is the last non-empty line of a command's stderr (decode's
// error message), or err's text.
func failureLine(stderr string, err error) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return err.Error()
}

// cappedBuffer keeps the first 64 KiB written to it: what a run says when
// it fails at once, without holding a long run's whole stderr.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
