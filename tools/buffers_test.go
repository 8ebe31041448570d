package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBuffers is an editor holding unsaved buffers by absolute path; a
// path without a buffer answers with an error, as a client would.
type fakeBuffers struct {
	mu      sync.Mutex
	text    map[string]string
	asked   []string // paths the tools asked for
	written map[string]string
}

func (b *fakeBuffers) ReadText(_ context.Context, abs string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, abs)
	t, ok := b.text[abs]
	if !ok {
		return "", errors.New("no buffer")
	}
	return t, nil
}

func (b *fakeBuffers) WriteText(_ context.Context, abs, content string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.text[abs], b.written[abs] = content, content
	return nil
}

func newBufferHarness(t *testing.T) (*fileHarness, *fakeBuffers) {
	ws, root, outside := newTestWorkspace(t)
	b := &fakeBuffers{text: map[string]string{}, written: map[string]string{}}
	return &fileHarness{t: t, ws: ws, root: root, outside: outside, reg: NewRegistry(FileToolsWith(ws, b)...)}, b
}

func TestFileToolsReadAndWriteThroughBuffers(t *testing.T) {
	h, b := newBufferHarness(t)
	p := filepath.Join(h.root, "a.txt")
	require.NoError(t, os.WriteFile(p, []byte("on disk\n"), 0o644))
	b.text[p] = "unsaved one\nunsaved two\n"

	// The read-before-edit guard holds with buffers too.
	assert.Contains(t, h.fails("edit", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"}), "not been read")

	res := h.ok("read", map[string]any{"path": "a.txt"})
	assert.Contains(t, res.Content, "1\tunsaved one\n")
	assert.NotContains(t, res.Content, "on disk")

	res = h.ok("edit", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"})
	assert.Contains(t, res.Content, "-unsaved one\n+unsaved 1\n", "the diff is of the buffer")
	assert.Equal(t, "unsaved 1\nunsaved two\n", b.written[p])
	data, _ := os.ReadFile(p)
	assert.Equal(t, "on disk\n", string(data), "the disk is the editor's to save")

	h.ok("multi_edit", map[string]any{"path": "a.txt", "edits": []map[string]any{{"old_string": "two", "new_string": "2"}}})
	assert.Equal(t, "unsaved 1\nunsaved 2\n", b.written[p])
	h.ok("write", map[string]any{"path": "a.txt", "content": "new\n"})
	assert.Equal(t, "new\n", b.written[p])

	// A change on disk since the read is still noticed.
	require.NoError(t, os.WriteFile(p, []byte("changed on disk, longer\n"), 0o644))
	assert.Contains(t, h.fails("edit", map[string]any{"path": "a.txt", "old_string": "new", "new_string": "x"}), "changed on disk")
}

func TestFileToolsBuffersFallBackAndConfine(t *testing.T) {
	h, b := newBufferHarness(t)
	p := filepath.Join(h.root, "b.txt")
	require.NoError(t, os.WriteFile(p, []byte("disk text\n"), 0o644))

	// No buffer (the client answers with an error): the disk is read.
	assert.Contains(t, h.ok("read", map[string]any{"path": "b.txt"}).Content, "1\tdisk text\n")
	assert.Equal(t, []string{p}, b.asked, "the client is asked with the resolved absolute path")

	// A path outside the workspace is refused before the client is asked.
	require.NoError(t, os.WriteFile(filepath.Join(h.outside, "secret.txt"), []byte("x\n"), 0o644))
	h.fails("read", map[string]any{"path": filepath.Join(h.outside, "secret.txt")})
	h.fails("write", map[string]any{"path": filepath.Join(h.outside, "new.txt"), "content": "x"})
	assert.Equal(t, []string{p}, b.asked)
	assert.Empty(t, b.written)
}
