package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"decode/agent"
)

// The STEP marker line is kept from the answer however the stream cuts
// it; text that only starts like one, or that says it mid-line, passes.
func TestStepSinkDropsMarkerLines(t *testing.T) {
	for chunks, want := range map[string]string{
		"Did it.\n|STE|P DO|NE":                  "Did it.\n",
		"Did it.\n\n**STEP FAILED**: no | tests": "Did it.\n",
		"Did it.\nSTEP| DONE\n":                  "Did it.\n",
		"Steps:\n\n1. a\nSTEPS are| fine\n":      "Steps:\n\n1. a\nSTEPS are fine\n",
		"We say STEP DONE |at the end.":          "We say STEP DONE at the end.",
		"Ste|ady.":                               "Steady.",
	} {
		var got strings.Builder
		s := &stepSink{next: func(ev agent.Event) {
			if ev.Type == agent.EventText {
				got.WriteString(ev.Text)
			}
		}}
		for _, c := range strings.Split(chunks, "|") {
			s.event(agent.Event{Type: agent.EventText, Text: c})
		}
		s.event(agent.Event{Type: agent.EventUsage})
		assert.Equal(t, want, got.String(), chunks)
	}
}
