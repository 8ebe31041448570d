package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAskUserAtATerminal(t *testing.T) {
	var asked string
	tool := NewAskUser(func(_ context.Context, q string) (string, error) {
		asked = q
		return "blue", nil
	})
	assert.Equal(t, "ask_user", tool.Spec().Name)
	assert.True(t, tool.ReadOnly())
	_, pauses := tool.Pause(json.RawMessage(`{"question":"which colour?"}`), time.Now())
	assert.False(t, pauses, "with a terminal the question is asked, not paused on")
	res, err := tool.Run(context.Background(), json.RawMessage(`{"question":" which colour? "}`))
	require.NoError(t, err)
	assert.Equal(t, "which colour?", asked)
	assert.Equal(t, "blue", res.Content)
	assert.False(t, res.IsError)
}

func TestAskUserFailures(t *testing.T) {
	failing := NewAskUser(func(context.Context, string) (string, error) { return "", errors.New("no tty") })
	res, err := failing.Run(context.Background(), json.RawMessage(`{"question":"q"}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "no tty")

	res, err = failing.Run(context.Background(), json.RawMessage(`{"question":"  "}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "empty")
}

func TestAskUserHeadlessPauses(t *testing.T) {
	tool := NewAskUser(nil)
	w, ok := tool.Pause(json.RawMessage(`{"question":"v1 or v2?"}`), time.Now())
	require.True(t, ok)
	assert.Equal(t, "v1 or v2?", w.Question)
	assert.True(t, w.Until.IsZero())
	_, ok = tool.Pause(json.RawMessage(`{"nope":1}`), time.Now())
	assert.False(t, ok, "bad arguments are reported by the call, not paused on")
	res, err := tool.Run(context.Background(), json.RawMessage(`{"question":"v1 or v2?"}`))
	require.NoError(t, err)
	assert.True(t, res.IsError, "run without anyone to ask")
}

func TestSleep(t *testing.T) {
	tool := NewSleep()
	assert.True(t, tool.ReadOnly())
	res, err := tool.Run(context.Background(), json.RawMessage(`{"seconds":0.001}`))
	require.NoError(t, err)
	assert.Equal(t, "waited 1ms", res.Content)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = tool.Run(ctx, json.RawMessage(`{"seconds":60}`))
	require.NoError(t, err)
	assert.True(t, res.IsError, "a cancelled sleep says so")

	res, err = tool.Run(context.Background(), json.RawMessage(`{"seconds":-1}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
}

func TestSleepPausesOnlyWhenLong(t *testing.T) {
	tool := NewSleep()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	_, ok := tool.Pause(json.RawMessage(`{"seconds":5}`), now)
	assert.False(t, ok, "a few seconds are slept in process")
	w, ok := tool.Pause(json.RawMessage(`{"seconds":90,"reason":"wait for CI"}`), now)
	require.True(t, ok)
	assert.Equal(t, now.Add(90*time.Second), w.Until)
	_, ok = tool.Pause(json.RawMessage(`{"seconds":1e12}`), now)
	assert.False(t, ok, "an out-of-range sleep is an error of the call")
}
