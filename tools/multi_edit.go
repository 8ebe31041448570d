package tools

import (
	"context"
	_ "embed"
)

//go:embed multi_edit.md
var multiEditDesc string

type multiEditArgs struct {
	Path  string   `json:"path"`
	Edits []editOp `json:"edits"`
}

func newMultiEditTool(s *fileState) Tool {
	t := newFuncTool("multi_edit", multiEditDesc, false, func(ctx context.Context, a multiEditArgs) (Result, error) {
		if len(a.Edits) == 0 {
			return errResult("multi_edit: no edits", "edits is empty; give at least one {old_string, new_string}."), nil
		}
		return s.editFile(ctx, a.Path, "multi_edit", a.Edits)
	})
	t.preview = func(ctx context.Context, a multiEditArgs) string {
		return s.previewEdit(ctx, a.Path, a.Edits)
	}
	return t
}
