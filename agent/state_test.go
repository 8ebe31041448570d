package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/tools"
)

// TestReadCarriesOverAResume: a file read by one process of a session
// still counts as read in the next (after a pause, in a new process with
// fresh tools), unless it changed on disk since.
func TestReadCarriesOverAResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "greeting.txt")
	require.NoError(t, os.WriteFile(path, []byte("hello\n"), 0o644))
	freshTools := func() *tools.Registry {
		ws, err := tools.NewWorkspace(dir)
		require.NoError(t, err)
		return tools.NewRegistry(tools.FileTools(ws)...)
	}
	edit := `{"path":"greeting.txt","old_string":"hello","new_string":"hi"}`
	m := &turnModel{responses: []llm.Response{
		say("", call("r", "read", `{"path":"greeting.txt"}`)),
		say("", call("e", "edit", edit)),
		say("done"),
	}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: freshTools(), Gate: askFor("edit"), Log: log}
	_, err := Run(context.Background(), opts, "change the greeting")
	require.ErrorIs(t, err, ErrPaused, "the edit waits for approval")
	decide(t, log, "allow", "")

	opts.Tools = freshTools() // a new process knows nothing of the read
	_, err = Run(context.Background(), opts, "")
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if !assert.Equal(t, "hi\n", string(data), "the edit after the resume went through") {
		dumpLog(t, log)
	}

	// A file changed on disk since it was read must be read again.
	m.responses = append(m.responses, say("", call("e2", "edit", `{"path":"greeting.txt","old_string":"hi","new_string":"hey"}`)), say("ok"))
	require.NoError(t, os.WriteFile(path, []byte("hi there, changed\n"), 0o644))
	opts.Tools, opts.Gate = freshTools(), allowAll
	_, err = Run(context.Background(), opts, "again")
	require.NoError(t, err)
	es := log.Entries()
	var last string
	for _, e := range es {
		if e.Type == "tool_result" {
			last = string(e.Data)
		}
	}
	assert.Contains(t, last, "changed on disk since you last read it")
}

func dumpLog(t *testing.T, l *MemoryLog) {
	for _, e := range l.Entries() {
		t.Logf("%s %s", e.Type, e.Data)
	}
}
