package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runTodoCall(t *testing.T, args string) Result {
	t.Helper()
	res, err := NewTodo().Run(context.Background(), json.RawMessage(args))
	require.NoError(t, err)
	return res
}

func TestTodoList(t *testing.T) {
	tool := NewTodo()
	assert.True(t, tool.ReadOnly(), "todo changes nothing outside decode")
	assert.Equal(t, "todo", tool.Spec().Name)

	res := runTodoCall(t, `{"todos":[
		{"content":"read the failing test","status":"done"},
		{"content":"fix   the\nparser","status":"in_progress"},
		{"content":"run go test ./...","status":"pending"},
		{"content":"tidy up","status":"completed"}]}`)
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "[x] read the failing test\n[>] fix the parser\n[ ] run go test ./...\n[x] tidy up\n", res.Content,
		"each item on one line, its status as a mark; completed is read as done")
	assert.Equal(t, "todo: 2/4 done", res.Note)

	res = runTodoCall(t, `{"todos":[]}`)
	assert.False(t, res.IsError)
	assert.Equal(t, "todo: list cleared", res.Note)
}

func TestTodoBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		`{}`:                          `missing required field "todos"`,
		`{"todos":"write tests"}`:     `"todos" must be an array`,
		`{"todos":[{"content":"x"}]}`: `"todos[0].status"`,
		`{"todos":[{"content":"x","status":"blocked"}]}`:       `"blocked"; use pending, in_progress or done`,
		`{"todos":[{"content":"  ","status":"pending"}]}`:      `todos[0].content is empty`,
		`{"todos":[{"content":"x","status":"done","id":1}]}`:   `unknown field "todos[0].id"`,
		`{"todos":[{"content":"x","status":"pending"}],"x":1}`: `unknown field "x"`,
	} {
		res := runTodoCall(t, args)
		assert.True(t, res.IsError, args)
		assert.Contains(t, res.Content, want, args)
	}
	long := fmt.Sprintf(`{"todos":[{"content":%q,"status":"pending"}]}`, strings.Repeat("x", todoMaxContent+1))
	assert.True(t, runTodoCall(t, long).IsError, "an item past the length cap")
	items := make([]string, todoMaxItems+1)
	for i := range items {
		items[i] = `{"content":"step","status":"pending"}`
	}
	res := runTodoCall(t, `{"todos":[`+strings.Join(items, ",")+`]}`)
	assert.True(t, res.IsError, "a list past the item cap")
	assert.Contains(t, res.Content, "at most 100")
}
