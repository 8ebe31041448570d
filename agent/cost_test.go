package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
	"decode/session"
	"decode/tools"
)

func TestCostRecordedPerResponse(t *testing.T) {
	first, second := say("looking", call("c1", "read", `{}`)), say("done")
	first.Model, second.Model = "reported-a", "reported-b"
	first.Usage, second.Usage = llm.Usage{Input: 100, Output: 10}, llm.Usage{Input: 300, Output: 30}
	m := &fakeModel{responses: []llm.Response{first, second}}
	var priced []string
	log := &MemoryLog{}
	out, err := Run(context.Background(), Options{
		Model: m, Tools: tools.NewRegistry(&fakeTool{name: "read", readOnly: true}), Gate: allowAll, Log: log,
		Cost: func(model string, u llm.Usage) float64 {
			priced = append(priced, model)
			return float64(u.Input+u.Output) / 1000
		},
	}, "go")
	require.NoError(t, err)

	assert.Equal(t, []string{"reported-a", "reported-b"}, priced, "each response priced under the name that answered")
	var costs []float64
	for _, e := range log.Entries() {
		if e.Type == session.TypeAssistant {
			var d session.AssistantData
			require.NoError(t, e.Decode(&d))
			costs = append(costs, d.Cost)
		}
	}
	assert.Equal(t, []float64{0.11, 0.33}, costs, "cost in each assistant entry")
	assert.InDelta(t, 0.44, out.Cost, 1e-9, "the run's total")
}

func TestCostNilRecordsNothing(t *testing.T) {
	log := &MemoryLog{}
	out, err := Run(context.Background(), Options{
		Model: &fakeModel{responses: []llm.Response{say("hi")}}, Tools: tools.NewRegistry(), Gate: allowAll, Log: log,
	}, "go")
	require.NoError(t, err)
	assert.Zero(t, out.Cost)
	for _, e := range log.Entries() {
		assert.NotContains(t, string(e.Data), `"cost"`, "no cost field when cost is unknown")
	}
}
