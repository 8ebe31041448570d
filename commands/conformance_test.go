package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent"
	"decode/agent/llm"
	"decode/agent/llm/conformance"
	"decode/agent/llm/providers"
	"decode/session"
	"decode/tools"
)

// conformanceProviders are the providers the loop conformance tests run
// over: each built the way decode builds it (agent/llm/providers), with its
// base URL variable pointing at the suite's local server, and tested with
// its adapter's fixture set. The provider-level suite runs beside the
// registry, in agent/llm/providers.
func conformanceProviders() []conformance.Provider {
	var out []conformance.Provider
	for _, p := range providers.All() {
		out = append(out, conformance.Provider{
			Name:         p.Name,
			Dir:          filepath.Join("..", "agent", "llm", p.Adapter(), "testdata"),
			New:          providerBuilder(p),
			ExitCode:     ExitCode,
			ExitProvider: ExitProvider,
		})
	}
	return out
}

// providerBuilder builds p's model the way a run does, from the
// environment: its key variable set and its base URL variable pointing at
// base.
func providerBuilder(p providers.Provider) func(t *testing.T, base, model string) llm.Model {
	return func(t *testing.T, base, model string) llm.Model {
		if p.Adapter() == "openai" {
			base += "/v1"
		}
		env := map[string]string{p.BaseEnv: base}
		if len(p.KeyEnv) > 0 {
			env[p.KeyEnv[0]] = "test-key-" + p.Name
		}
		f, _, _ := providerTestFactory(t, env)
		mc, err := f.resolveModel(p.Name+":"+model, Config{})
		require.NoError(t, err, "resolve %s:%s", p.Name, model)
		require.Equal(t, base, mc.Base, "%s's base URL comes from %s", p.Name, p.BaseEnv)
		m, err := mc.Build(context.Background())
		require.NoError(t, err)
		return m
	}
}

// providerTestFactory is a Factory over buffers and the given environment
// only, in a temp directory.
func providerTestFactory(t *testing.T, env map[string]string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	full := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, ".config"), "DECODE_STORE": filepath.Join(dir, "store")}
	for k, v := range env {
		full[k] = v
	}
	var out, errb bytes.Buffer
	f := &Factory{
		Version: "test",
		IO:      &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb},
		Getenv:  func(k string) string { return full[k] },
		Environ: func() []string {
			var kv []string
			for k, v := range full {
				kv = append(kv, k+"="+v)
			}
			return kv
		},
		Getwd: func() (string, error) { return dir, nil },
	}
	return f, &out, &errb
}

// echoTool is a tool the loop tests call: it rejects arguments that are
// not JSON as the built-in tools do, and otherwise answers with a marker
// the next request must carry back to the model.
type echoTool struct {
	name string
	args []string
	// pad is appended to the result (a tool output too large for the window).
	pad string
}

const echoMarker = "echo-result-7d1f"

func (e *echoTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: e.name, Description: "test tool", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (e *echoTool) ReadOnly() bool { return true }
func (e *echoTool) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	e.args = append(e.args, string(args))
	if !json.Valid(args) {
		return tools.Result{Content: "invalid arguments: not JSON; send a JSON object", IsError: true}, nil
	}
	return tools.Result{Content: echoMarker + e.pad}, nil
}

type allowGate struct{}

func (allowGate) Check(string, bool, json.RawMessage) tools.Verdict {
	return tools.Verdict{Decision: tools.Allow}
}

// loopRun runs agent.Run over provider p, whose server answers with
// replies, and returns the outcome, the session and the server.
func loopRun(t *testing.T, p conformance.Provider, tool *echoTool, replies ...conformance.Reply) (agent.Outcome, []session.Entry, *conformance.Server, error) {
	fx := conformance.Load(t, p.Dir)
	srv := conformance.NewServer(t, p.Dir, fx.Path)
	srv.Queue(replies...)
	sl := &conformance.Sleeps{}
	m := llm.WithRetry(p.New(t, srv.URL, fx.Model), sl.Policy())
	log := &agent.MemoryLog{}
	out, err := agent.Run(context.Background(), agent.Options{
		Model: m, Tools: tools.NewRegistry(tool), Gate: allowGate{}, Log: log,
		System: "You are decode.", Cost: costFunc(m.Name()),
	}, "read main.go")
	return out, log.Entries(), srv, err
}

func entryTypes(es []session.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

// TestLoopConformance runs a two-step loop (a tool call, then the answer)
// through agent.Run over every provider.
func TestLoopConformance(t *testing.T) {
	for _, p := range conformanceProviders() {
		t.Run(p.Name, func(t *testing.T) {
			fx := conformance.Load(t, p.Dir)
			tool := &echoTool{name: fx.ToolCall.Calls[0].Name}
			out, es, srv, err := loopRun(t, p, tool, fx.ToolCall.Reply, fx.Text.Reply)
			require.NoError(t, err)

			assert.Equal(t, fx.Text.Text, out.Text)
			assert.Equal(t, 2, out.Turns)
			assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "assistant", "end"}, entryTypes(es))
			require.Len(t, tool.args, 1, "the tool ran once")
			assert.JSONEq(t, string(fx.ToolCall.Calls[0].Args), tool.args[0])
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Contains(t, string(reqs[1].Body), echoMarker, "the tool's result goes back to the model")
			assert.Contains(t, string(reqs[1].Body), "read main.go", "with the conversation before it")

			var last session.AssistantData
			require.NoError(t, es[4].Decode(&last))
			assert.Equal(t, fx.Text.Text, last.Message.Text)
			assert.Positive(t, last.Usage.Input, "usage recorded in the assistant entry")
			if fx.Text.Usage != nil {
				assert.Equal(t, *fx.Text.Usage, last.Usage)
			}
			if _, known := llm.LookupModel(p.Name + ":" + fx.Model); known {
				assert.Positive(t, last.Cost, "a known model's cost is recorded")
				assert.Positive(t, out.Cost)
			} else {
				assert.Zero(t, last.Cost, "no price, no cost")
			}
		})
	}
}

// TestLoopInvalidToolArguments: a model that sends arguments that are not
// JSON gets a tool error it can correct, and the run goes on.
func TestLoopInvalidToolArguments(t *testing.T) {
	for _, p := range conformanceProviders() {
		t.Run(p.Name, func(t *testing.T) {
			fx := conformance.Load(t, p.Dir)
			if fx.InvalidArgs.Kind != "" {
				t.Skipf("%s cannot send invalid JSON; its malformed calls are retried (see the conformance suite)", p.Name)
			}
			tool := &echoTool{name: fx.InvalidArgs.Calls[0].Name}
			out, es, srv, err := loopRun(t, p, tool, fx.InvalidArgs.Reply, fx.Text.Reply)
			require.NoError(t, err, "not a crash")
			assert.Equal(t, fx.Text.Text, out.Text)
			assert.Equal(t, []string{fx.InvalidArgs.Calls[0].RawArgs}, tool.args, "the tool saw the arguments as sent")
			var res session.ToolResultData
			require.NoError(t, es[3].Decode(&res))
			assert.True(t, res.IsError)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Contains(t, string(reqs[1].Body), "invalid arguments", "the model sees the error")
		})
	}
}

// TestLoopContextTooLongCompactsAndRetries: a provider's own
// context-too-long answer makes the loop compact (a summary request, in
// the provider's format) and send the request once more, over every
// provider.
func TestLoopContextTooLongCompactsAndRetries(t *testing.T) {
	for _, p := range conformanceProviders() {
		t.Run(p.Name, func(t *testing.T) {
			fx := conformance.Load(t, p.Dir)
			// A tool output the provider will find too long.
			tool := &echoTool{name: fx.ToolCall.Calls[0].Name, pad: strings.Repeat(" padding", 20000)}
			// tool call; refused as too long; the summary; the retried request.
			out, es, srv, err := loopRun(t, p, tool, fx.ToolCall.Reply, fx.ContextTooLong.Reply, fx.Text.Reply, fx.Text.Reply)
			require.NoError(t, err)
			assert.Equal(t, fx.Text.Text, out.Text)
			assert.Equal(t, []string{"user", "assistant", "tool_call", "tool_result", "compaction", "assistant", "end"}, entryTypes(es))
			var d session.CompactionData
			require.NoError(t, es[4].Decode(&d))
			assert.Equal(t, agent.TriggerOverflow, d.Trigger)
			assert.Contains(t, d.Reason, "context_too_long", "the provider's answer is kept")
			assert.Equal(t, "read main.go", d.State.Task.Text)
			reqs := srv.Requests()
			require.Len(t, reqs, 4, "retried once after compacting")
			assert.Contains(t, string(reqs[2].Body), "You summarise the earlier part", "the summary request")
			assert.Contains(t, string(reqs[3].Body), "decode compacted this conversation", "the retry carries the compacted context")
			assert.Contains(t, string(reqs[3].Body), "read main.go", "and the task")
			assert.Less(t, len(reqs[3].Body), len(reqs[1].Body)/5, "the retry is much smaller than the refused request")
		})
	}
}
