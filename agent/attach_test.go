package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

// TestAttachedOnceAndRebuilt: the files attached to a command go with its
// first prompt only, are recorded in that user entry, and a later run
// (a re-plan, a resume) rebuilds the image into the same message from the
// log.
func TestAttachedOnceAndRebuilt(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	files := []session.Attachment{
		{Path: "notes.txt", Size: 5, SHA256: "aa", MIME: "text/plain; charset=utf-8"},
		{Path: "shot.png", Size: int64(len(png)), SHA256: "bb", MIME: "image/png", Image: png},
	}
	m := &fakeModel{responses: []llm.Response{say("one"), say("two")}}
	log := &MemoryLog{}
	opts := Options{Model: m, Tools: tools.NewRegistry(), Gate: allowAll, Log: log, Attach: NewAttached(files)}
	_, err := Run(context.Background(), opts, "look")
	require.NoError(t, err)
	_, err = Run(context.Background(), opts, "again")
	require.NoError(t, err)

	require.Len(t, m.reqs, 2)
	want := llm.Message{Role: llm.RoleUser, Text: "look", Images: []llm.Image{{MIME: "image/png", Data: png}}}
	assert.Equal(t, []llm.Message{want}, m.reqs[0].Messages, "the image goes with the first prompt")
	require.Len(t, m.reqs[1].Messages, 3)
	assert.Equal(t, want, m.reqs[1].Messages[0], "rebuilt from the log with its image")
	assert.Equal(t, llm.Message{Role: llm.RoleUser, Text: "again"}, m.reqs[1].Messages[2], "a later prompt of the same command carries nothing")

	var users []session.UserData
	for _, e := range log.Entries() {
		if e.Type == session.TypeUser {
			var d session.UserData
			require.NoError(t, e.Decode(&d))
			users = append(users, d)
		}
	}
	require.Len(t, users, 2)
	assert.Equal(t, files, users[0].Attachments, "recorded with the prompt, bytes and all")
	assert.Empty(t, users[1].Attachments)
	assert.Contains(t, string(log.Entries()[0].Data), `"image":"89504e47`, "image bytes are stored in hex")
}
