package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent"
)

func TestColorLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"✗ bash rm x: denied\n", sgrRed + "✗ bash rm x: denied" + sgrReset + "\n"},
		{"• read a.go\n", sgrGreen + "•" + sgrReset + " read a.go\n"},
		{"decode: warning: cut\n", sgrYellow + "decode: warning: cut" + sgrReset + "\n"},
		{"⏸ bash needs approval\n", sgrYellow + "⏸ bash needs approval" + sgrReset + "\n"},
		{"decode: rate_limit; retrying (attempt 2)\n", sgrYellow + "decode: rate_limit; retrying (attempt 2)" + sgrReset + "\n"},
		{"decode: 2 model requests, 10 tokens in\n", sgrDim + "decode: 2 model requests, 10 tokens in" + sgrReset + "\n"},
		{"session abc\n", "session abc\n"},
		{"partial", "partial"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, colorLine(tt.in), "colour of %q", tt.in)
	}
}

func TestTerminalNiceties(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tty := &IOStreams{ErrTTY: true, Err: &bytes.Buffer{}}
	pipe := &IOStreams{Err: &bytes.Buffer{}}

	assert.Equal(t, terminal{}, newTerminal(pipe, env()), "a pipe gets nothing")
	assert.Equal(t, terminal{}, newTerminal(tty, env("TERM", "dumb")), "TERM=dumb gets nothing")
	nc := newTerminal(tty, env("NO_COLOR", "1"))
	assert.True(t, nc.spin, "NO_COLOR keeps the spinner")
	assert.False(t, nc.color, "NO_COLOR means no colour")
	full := newTerminal(tty, env("TERM", "xterm"))
	assert.True(t, full.spin && full.color)
}

func TestSpinnerDrawsAndClears(t *testing.T) {
	var buf bytes.Buffer
	s := &spinner{w: &buf}
	s.Start("gemini-2.5-flash")
	s.Start("gemini-2.5-flash") // a second request while running: one spinner
	w := &termWriter{w: &buf, spin: s, color: true}
	w.Write([]byte("✗ bash x: denied\n"))
	s.Stop()
	s.Stop()
	out := buf.String()
	require.True(t, strings.HasPrefix(out, "\r\x1b[K⠋ gemini-2.5-flash 0.0s"), "first frame drawn at once: %q", out)
	assert.Contains(t, out, "\r\x1b[K"+sgrRed+"✗ bash x: denied", "the line is cleared before decode writes")
	assert.True(t, strings.HasSuffix(out, "\r\x1b[K") || strings.HasSuffix(out, "denied"+sgrReset+"\n"),
		"stopping leaves no frame behind: %q", out)
	assert.False(t, s.drawn)
}

func TestElapsed(t *testing.T) {
	assert.Equal(t, "0.4s", elapsed(400_000_000))
	assert.Equal(t, "1m05s", elapsed(65_000_000_000))
}

func TestNewSinkPicksOutput(t *testing.T) {
	getenv := func(string) string { return "" }
	f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, Getenv: getenv}
	assert.IsType(t, &renderer{}, newSink(f, &AgentOptions{}))
	assert.IsType(t, &jsonRenderer{}, newSink(f, &AgentOptions{JSON: true}))
	assert.IsType(t, &schemaText{}, newSink(f, &AgentOptions{SchemaFile: "s.json"}))

	f.IO.ErrTTY = true
	assert.IsType(t, &spinSink{}, newSink(f, &AgentOptions{}), "a terminal gets the spinner")
	assert.IsType(t, &renderer{}, newSink(f, &AgentOptions{Quiet: true}), "-q: no spinner")
	assert.IsType(t, &jsonRenderer{}, newSink(f, &AgentOptions{JSON: true}), "--json: no spinner")
}

func TestSchemaTextPrintsOnlyTheAnswer(t *testing.T) {
	var out, errb bytes.Buffer
	f := &Factory{IO: &IOStreams{Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
	s := newSink(f, &AgentOptions{SchemaFile: "s.json"})
	s.event(agent.Event{Type: agent.EventText, Text: "```json\n{\"ok\": true}"})
	s.finish(agent.Outcome{Text: `{"ok":true}`, Turns: 1}, nil)
	assert.Equal(t, "{\"ok\":true}\n", out.String())
	assert.Contains(t, errb.String(), "1 model request,")
}
