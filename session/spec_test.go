package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecOverride(t *testing.T) {
	rec := RunSpec{Model: "openai:gpt-4.1-mini", Mode: "default", Allow: []string{"bash(ls *)"}, MaxCost: 0.5, OnAsk: "pause"}
	same, ch := rec.Override(RunSpec{})
	assert.Equal(t, rec, same, "no flags, no change")
	assert.Empty(t, ch)

	got, ch := rec.Override(RunSpec{Model: "script:x.json", Mode: "edit", Allow: []string{"bash(ls *)", "bash(go test *)"},
		Deny: []string{"bash(rm *)"}, MaxCost: 2, Timeout: time.Minute})
	assert.Equal(t, "script:x.json", got.Model)
	assert.Equal(t, "edit", got.Mode)
	assert.Equal(t, []string{"bash(ls *)", "bash(go test *)"}, got.Allow, "rules are added, once")
	assert.Equal(t, []string{"bash(rm *)"}, got.Deny)
	assert.Equal(t, 2.0, got.MaxCost)
	assert.Equal(t, "pause", got.OnAsk, "what no flag gives is kept")
	assert.Equal(t, []string{"bash(ls *)"}, rec.Allow, "the recorded spec is not changed")
	var lines []string
	for _, c := range ch {
		lines = append(lines, c.String())
	}
	assert.Equal(t, []string{
		"mode: default → edit",
		"allow: bash(ls *) → bash(ls *), bash(go test *)",
		"deny: none → bash(rm *)",
		"max-cost: $0.5 → $2",
		"timeout: no limit → 1m0s",
	}, lines, "the model is not a change of spec")
	assert.True(t, ch[0].Looser, "edit is looser than default")
	assert.True(t, ch[1].Looser, "an allow rule loosens")
	assert.False(t, ch[2].Looser, "a deny rule tightens")

	_, ch = RunSpec{Mode: "edit"}.Override(RunSpec{Mode: "plan"})
	require.Len(t, ch, 1)
	assert.False(t, ch[0].Looser, "plan is tighter")
	assert.Equal(t, []string{"mode bypass", "allow x", "add-dir /d"}, RunSpec{Mode: "bypass", Allow: []string{"x"}, AddDirs: []string{"/d"}}.Wider())
	assert.Empty(t, RunSpec{Mode: "plan", Deny: []string{"y"}}.Wider())
}

func TestSpecOf(t *testing.T) {
	_, ok := SpecOf(nil)
	assert.False(t, ok)
	old := []Entry{NewEntry(TypeStart, StartData{Model: "m", Mode: "edit"}, "")}
	s, ok := SpecOf(old)
	assert.True(t, ok)
	assert.Equal(t, RunSpec{Model: "m", Mode: "edit"}, s, "a session from before specs keeps its model and mode")

	es := []Entry{
		NewEntry(TypeStart, StartData{Model: "m", Mode: "default", Spec: &RunSpec{Model: "m", Mode: "default", MaxTurns: 3}}, ""),
		NewEntry(TypeUser, UserData{Text: "hi"}, ""),
		NewEntry(TypeSpec, SpecData{Changes: []SpecChange{{Setting: "mode", From: "default", To: "edit"}}, Spec: RunSpec{Model: "m", Mode: "edit", MaxTurns: 3}}, ""),
	}
	s, _ = SpecOf(es)
	assert.Equal(t, "edit", s.Mode, "a spec entry changes the spec from then on")
	assert.Equal(t, 3, s.MaxTurns)
}
