package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runSkill(t *testing.T, tool Tool, args string) Result {
	t.Helper()
	res, err := tool.Run(context.Background(), json.RawMessage(args))
	require.NoError(t, err)
	return res
}

func TestSkillLoadsOnDemand(t *testing.T) {
	var loaded []string
	tool := NewSkill([]string{"release", "review"}, func(name string) (string, error) {
		loaded = append(loaded, name)
		if name == "review" {
			return "", errors.New("permission denied")
		}
		return "Tag, then push the tag.", nil
	})

	assert.True(t, tool.ReadOnly())
	assert.Equal(t, "skill", tool.Spec().Name)
	assert.Empty(t, loaded, "building the tool loads nothing")

	res := runSkill(t, tool, `{"name":"release"}`)
	assert.False(t, res.IsError)
	assert.Equal(t, "Tag, then push the tag.", res.Content)
	assert.Equal(t, "skill release: loaded (23 bytes)", res.Note)

	res = runSkill(t, tool, `{"name":"deploy"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, `no skill named "deploy"`)
	assert.Contains(t, res.Content, "release, review", "the model is told which skills exist")

	res = runSkill(t, tool, `{"name":"review"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "permission denied")

	res = runSkill(t, tool, `{}`)
	assert.True(t, res.IsError, "name is required")

	assert.Equal(t, []string{"release", "review"}, loaded, "only known skills are loaded, when asked for")
}

func TestSkillSpecIsSmall(t *testing.T) {
	b, err := json.Marshal(NewSkill(nil, nil).Spec())
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 300, "the skill tool's spec in bytes: %s", b)
}
