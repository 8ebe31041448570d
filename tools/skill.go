package tools

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed skill.md
var skillDesc string

type skillArgs struct {
	Name string `json:"name"`
}

// SkillLoader returns the instructions of the skill called name.
type SkillLoader func(name string) (string, error)

type skillTool struct {
	names []string
	load  SkillLoader
}

// NewSkill returns the skill tool, which hands the model a skill's full
// instructions when it asks for one, so a skill costs only its line in the
// system prompt until it is used. names are the skills that exist, quoted
// back when the model asks for another; load reads one. The tool is
// read-only: it reads instructions and changes nothing.
func NewSkill(names []string, load SkillLoader) Tool {
	s := &skillTool{names: slices.Clone(names), load: load}
	return newFuncTool("skill", skillDesc, true, s.run)
}

func (s *skillTool) run(_ context.Context, a skillArgs) (Result, error) {
	name := strings.TrimSpace(a.Name)
	if !slices.Contains(s.names, name) {
		return errResult("skill "+name+": unknown",
			fmt.Sprintf("there is no skill named %q; the skills are: %s", name, strings.Join(s.names, ", "))), nil
	}
	text, err := s.load(name)
	if err != nil {
		return errResult("skill "+name+": unreadable", fmt.Sprintf("skill %s could not be loaded: %v", name, err)), nil
	}
	return Result{Content: text, Note: fmt.Sprintf("skill %s: loaded (%d bytes)", name, len(text))}, nil
}
