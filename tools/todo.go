package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed todo.md
var todoDesc string

// Limits of the todo list: enough for any plan, small enough that a runaway
// model cannot fill the context through it.
const (
	todoMaxItems   = 100
	todoMaxContent = 500
)

type todoItem struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

type todoArgs struct {
	Todos []todoItem `json:"todos"`
}

// NewTodo returns the todo tool. The list lives in the session: every call
// carries the whole list in its arguments, which the session stores, so the
// latest list is in the context after a resume and the tool keeps no state.
// It is read-only: it changes nothing outside decode.
func NewTodo() Tool {
	return newFuncTool("todo", todoDesc, true, runTodo)
}

// todoStatuses maps the statuses the model may send to the canonical ones;
// "completed" and "in-progress" are common spellings models reach for.
var todoStatuses = map[string]string{
	"pending": "pending", "in_progress": "in_progress", "in-progress": "in_progress",
	"done": "done", "completed": "done",
}

var todoMarks = map[string]string{"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}

func runTodo(_ context.Context, a todoArgs) (Result, error) {
	if len(a.Todos) > todoMaxItems {
		return errResult("todo: too many items", fmt.Sprintf("the list has %d items; keep it to at most %d by merging small steps", len(a.Todos), todoMaxItems)), nil
	}
	var b strings.Builder
	done := 0
	for i, it := range a.Todos {
		status, ok := todoStatuses[strings.ToLower(strings.TrimSpace(it.Status))]
		if !ok {
			return errResult("todo: bad status", fmt.Sprintf("todos[%d].status is %q; use pending, in_progress or done", i, it.Status)), nil
		}
		content := strings.Join(strings.Fields(it.Content), " ")
		switch {
		case content == "":
			return errResult("todo: empty item", fmt.Sprintf("todos[%d].content is empty; describe the task", i)), nil
		case len(content) > todoMaxContent:
			return errResult("todo: item too long", fmt.Sprintf("todos[%d].content is %d bytes; keep each task under %d", i, len(content), todoMaxContent)), nil
		}
		if status == "done" {
			done++
		}
		fmt.Fprintf(&b, "%s %s\n", todoMarks[status], content)
	}
	if len(a.Todos) == 0 {
		return Result{Content: "The task list is empty.", Note: "todo: list cleared"}, nil
	}
	return Result{Content: b.String(), Note: fmt.Sprintf("todo: %d/%d done", done, len(a.Todos))}, nil
}
