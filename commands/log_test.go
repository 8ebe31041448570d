package commands

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"decode/agent/llm"
	"decode/session"
)

// testFactory is a Factory over buffers and an empty environment.
func testFactory() *Factory {
	return &Factory{
		Version: "test",
		IO:      &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}},
		Getenv:  func(string) string { return "" },
		Environ: func() []string { return nil },
		Getwd:   func() (string, error) { return "/nowhere", nil },
	}
}

// runCmd runs one command's command line through an app as Main would
// (flags after arguments included) and returns the action's error.
func runCmd(t *testing.T, cmd *cli.Command, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "decode", Commands: []*cli.Command{cmd}, ExitErrHandler: func(*cli.Context, error) {},
		Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}}
	return app.Run(permuteArgs(app, append([]string{"decode", cmd.Name}, args...)))
}

func TestLogCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  LogOptions
		usage string
	}{
		{args: nil, want: LogOptions{}},
		{args: []string{"-n", "5"}, want: LogOptions{Limit: 5}},
		{args: []string{"@", "--json"}, want: LogOptions{Sessions: []string{"@"}, JSON: true}},
		{args: []string{"3f2a", "--stat", "--json"}, want: LogOptions{Sessions: []string{"3f2a"}, Stat: true, JSON: true}},
		{args: []string{"--check"}, want: LogOptions{Check: true}},
		{args: []string{"--diff", "a", "b"}, want: LogOptions{Sessions: []string{"a", "b"}, Diff: true}},
		{args: []string{"a", "b", "--diff"}, want: LogOptions{Sessions: []string{"a", "b"}, Diff: true}},
		{args: []string{"--diff", "a"}, usage: "two sessions"},
		{args: []string{"a", "b"}, usage: "at most one SESSION"},
		{args: []string{"--stat"}, usage: "need a SESSION"},
		{args: []string{"--jsonl"}, usage: "need a SESSION"},
		{args: []string{"--stat", "--check", "@"}, usage: "one of"},
		{args: []string{"--json", "--jsonl", "@"}, usage: "--json goes with"},
		{args: []string{"-n", "-1"}, usage: "negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *LogOptions
			err := runCmd(t, NewCmdLog(testFactory(), func(_ *cli.Context, o *LogOptions) error { got = o; return nil }), tc.args...)
			if tc.usage != "" {
				var ue *UsageError
				require.ErrorAs(t, err, &ue)
				assert.Contains(t, ue.Msg, tc.usage)
				return
			}
			require.NoError(t, err)
			got.F = nil
			if len(got.Sessions) == 0 {
				got.Sessions = nil
			}
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestForkCommandLine(t *testing.T) {
	for arg, want := range map[string]ForkOptions{
		"3f2a":     {Ref: "3f2a"},
		"3f2a@12":  {Ref: "3f2a", At: 12},
		"@":        {Ref: "@"},
		"@@3":      {Ref: "@", At: 3},
		"@~2@5":    {Ref: "@~2", At: 5},
		"@~2":      {Ref: "@~2"},
		"abc@~2":   {Ref: "abc@~2"}, // not an entry: resolution reports it
		"3f2a@12q": {},
		"3f2a@0":   {},
	} {
		t.Run(arg, func(t *testing.T) {
			var got *ForkOptions
			err := runCmd(t, NewCmdFork(testFactory(), func(_ *cli.Context, o *ForkOptions) error { got = o; return nil }), arg)
			if want.Ref == "" {
				var ue *UsageError
				require.ErrorAs(t, err, &ue)
				assert.Contains(t, ue.Msg, "positive number")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want.Ref, got.Ref)
			assert.Equal(t, want.At, got.At)
		})
	}
	err := runCmd(t, NewCmdFork(testFactory(), nil))
	assert.ErrorContains(t, err, "fork takes one SESSION")
}

func TestResumeAndReplayCommandLines(t *testing.T) {
	var ro *ResumeOptions
	err := runCmd(t, NewCmdResume(testFactory(), func(_ *cli.Context, o *ResumeOptions) error { ro = o; return nil }),
		"3f2a", "try another way", "--mode", "edit", "-m", "script:x.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"3f2a", "try another way"}, ro.Args)
	assert.Equal(t, "edit", ro.Agent.Mode)
	assert.Equal(t, "script:x.json", ro.Agent.Model)
	assert.Empty(t, ro.Agent.Prompt, "resume works out the prompt once it knows the session")

	var rp *ReplayOptions
	err = runCmd(t, NewCmdReplay(testFactory(), func(_ *cli.Context, o *ReplayOptions) error { rp = o; return nil }),
		"3f2a", "-m", "openai:gpt-4.1-mini", "--on-ask", "deny")
	require.NoError(t, err)
	assert.Equal(t, "3f2a", rp.Source)
	assert.Equal(t, "openai:gpt-4.1-mini", rp.Agent.Model)
	assert.Equal(t, "deny", rp.Agent.OnAsk)
	err = runCmd(t, NewCmdReplay(testFactory(), nil), "a", "b")
	assert.ErrorContains(t, err, "replay takes one SESSION")
}

// entries numbers es as the store would, one second apart from t0.
func entries(t0 time.Time, es ...session.Entry) []session.Entry {
	for i := range es {
		es[i].V, es[i].ID, es[i].Parent, es[i].TS = 1, i+1, i, t0.Add(time.Duration(i)*time.Second)
	}
	return es
}

func assistant(text string, u llm.Usage, extra map[string]any) session.Entry {
	d := map[string]any{"message": llm.Message{Role: llm.RoleAssistant, Text: text}, "usage": u, "ms": 100}
	for k, v := range extra {
		d[k] = v
	}
	return session.NewEntry(session.TypeAssistant, d, "")
}

func TestStatEntries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func(id, name, decision string) session.Entry {
		return session.NewEntry(session.TypeToolCall, session.ToolCallData{CallID: id, Name: name, Decision: decision}, "")
	}
	result := func(id, name string, isErr bool) session.Entry {
		return session.NewEntry(session.TypeToolResult, session.ToolResultData{
			ToolResult: llm.ToolResult{CallID: id, Name: name, IsError: isErr}, Ms: 7}, "")
	}
	es := entries(t0,
		session.NewEntry(session.TypeStart, session.StartData{Model: "m"}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "go"}, ""),
		assistant("", llm.Usage{Input: 100, Output: 10, CacheRead: 80}, map[string]any{"cost": 0.25}),
		call("c1", "bash", "deny"), result("c1", "bash", true),
		call("c2", "read", "allow"), result("c2", "read", true),
		call("c3", "read", "allow"), result("c3", "read", false),
		session.NewEntry(session.TypeError, session.ErrorData{Kind: "server", Message: "x"}, ""),
		assistant("done", llm.Usage{Input: 200, Output: 20}, map[string]any{"cost": 0.5}),
		session.NewEntry(session.TypeEnd, session.EndData{Status: "done", Ms: 1500}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "more"}, ""),
		assistant("killed before its end entry", llm.Usage{Input: 1, Output: 1}, nil),
	)
	st := statEntries(session.Info{ID: "s1", Status: "running", Entries: len(es), Turns: 2}, 1, es)
	assert.Equal(t, "s1", st.Session)
	assert.Equal(t, 3, st.Requests)
	assert.Equal(t, 1, st.FailedRequests)
	assert.Equal(t, llm.Usage{Input: 301, Output: 31, CacheRead: 80}, st.Usage)
	require.NotNil(t, st.CostUSD)
	assert.InDelta(t, 0.75, *st.CostUSD, 1e-9, "cost summed from the assistant entries that carry it")
	assert.Equal(t, 1, st.Runs)
	assert.Equal(t, int64(1500+1000), st.WallMs, "ended runs by their end entries, the unfinished one by its timestamps")
	assert.Equal(t, int64(300), st.ModelMs)
	assert.Equal(t, int64(21), st.ToolMs)
	assert.Equal(t, 3, st.ToolCalls)
	assert.Equal(t, []toolStat{
		{Name: "read", Calls: 2, Errors: 1, Ms: 14},
		{Name: "bash", Calls: 1, Denied: 1, Ms: 7},
	}, st.Tools, "a denied call is not also an error")

	var out bytes.Buffer
	printStat(&out, st)
	for _, want := range []string{
		"requests   3 (1 failed)\n",
		"tokens     301 in, 31 out, 80 cache read, 0 cache write\n",
		"cost       $0.7500\n",
		"time       2.5s wall, 300ms in the model, 21ms in tools\n",
		"  read            2     14ms (1 error)\n",
		"  bash            1      7ms (1 denied)\n",
		"unreadable 1 line skipped (decode log --check s1)\n",
	} {
		assert.Contains(t, out.String(), want)
	}

	noCost := statEntries(session.Info{}, 0, entries(t0, assistant("x", llm.Usage{}, nil),
		session.NewEntry(session.TypeEnd, map[string]any{"status": "done", "cost": 0.1}, "")))
	require.NotNil(t, noCost.CostUSD, "an end entry's cost counts when responses carry none")
	assert.InDelta(t, 0.1, *noCost.CostUSD, 1e-9)
	out.Reset()
	printStat(&out, statEntries(session.Info{}, 0, entries(t0, assistant("x", llm.Usage{}, nil))))
	assert.NotContains(t, out.String(), "cost", "no cost line when no entry carries one")
}

func TestEntryText(t *testing.T) {
	args := json.RawMessage(`{"path":"main.go"}`)
	for _, tc := range []struct {
		e    session.Entry
		want string
	}{
		{session.NewEntry(session.TypeUser, session.UserData{Text: "two\nlines\n"}, ""), "> two\n> lines"},
		{session.NewEntry(session.TypeSteer, session.UserData{Text: "hurry"}, ""), "> (steer) hurry"},
		{assistant("", llm.Usage{}, nil), ""},
		{session.NewEntry(session.TypeToolCall, session.ToolCallData{Name: "read", Args: args, Decision: "allow"}, ""), "→ read main.go"},
		{session.NewEntry(session.TypeToolCall, session.ToolCallData{Name: "bash", Args: json.RawMessage(`{"command":"rm x"}`), Decision: "deny", Reason: "no\nmore"}, ""), "→ bash rm x [deny: no]"},
		{session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{Name: "read", Content: "  1\tpackage main\n  2\t"}}, ""), "← read ok: 1 package main"},
		{session.NewEntry(session.TypeToolResult, session.ToolResultData{ToolResult: llm.ToolResult{Name: "edit", IsError: true}}, ""), "← edit error"},
		{session.NewEntry(session.TypeFork, session.ForkData{From: "abc", At: 4}, ""), "# forked from abc after entry 4"},
		{session.NewEntry(session.TypeFork, session.ForkData{From: "abc", At: 2, Replay: true, Model: "m"}, ""), "# replay of abc on m"},
		{session.NewEntry(session.TypeEnd, session.EndData{Status: "done", Turns: 1, Ms: 61_000}, ""), "# done (exit 0): 1 request, 0 tokens in, 0 out, 1m01s"},
		{session.NewEntry("frob", map[string]int{"x": 1}, ""), `[frob] {"x":1}`},
	} {
		assert.Equal(t, tc.want, entryText(tc.e), "%s %s", tc.e.Type, tc.e.Data)
	}
}

func TestPrintTranscriptNumbersEntries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printTranscript(&out, entries(t0,
		session.NewEntry(session.TypeUser, session.UserData{Text: "hi"}, ""),
		assistant("", llm.Usage{}, nil),
		assistant("line one\nline two", llm.Usage{}, nil)))
	assert.Equal(t, "   1  > hi\n   3  line one\n      line two\n", out.String())
}

func TestDiffSessions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := entries(t0,
		session.NewEntry(session.TypeStart, session.StartData{Model: "m"}, ""),
		session.NewEntry(session.TypeUser, session.UserData{Text: "go"}, ""),
		assistant("A", llm.Usage{}, nil))
	other := append(entries(t0, base[0], base[1])[:2:2], entries(t0, base[0], base[1], assistant("B", llm.Usage{}, nil))[2])
	d := diffSessions("a", base, "b", other)
	assert.Equal(t, 2, d.Common)
	require.Len(t, d.AAfter, 1)
	require.Len(t, d.BAfter, 1)
	assert.Equal(t, 3, d.BAfter[0].ID)

	same := diffSessions("a", base, "b", base[:2])
	assert.Equal(t, 2, same.Common)
	assert.Empty(t, same.BAfter)
	assert.NotNil(t, same.BAfter, "an empty side is [] in JSON, not null")

	var out bytes.Buffer
	printDiff(&out, d, base, sessionStat{Session: "a"}, sessionStat{Session: "b"})
	assert.Contains(t, out.String(), "common: 2 entries, up to entry 2: > go\n")
	assert.Contains(t, out.String(), "\nA a: 1 entry after\n   3  A\n")
	assert.Contains(t, out.String(), "\nB b: 1 entry after\n   3  B\n")
}

func TestPrintList(t *testing.T) {
	now := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	printList(&out, []session.Info{
		{ID: "1m8nq3t2ewg", Updated: now.Add(-90 * time.Second), Model: "gemini-2.5-flash", Status: "done", Turns: 3, Title: "fix the test"},
		{ID: "1m8nq3t2ewh", Updated: now.Add(-50 * time.Hour), Status: "interrupted", Turns: 12, Title: "older"},
	}, now)
	assert.Equal(t, ""+
		"1m8nq3t2ewg    1m  gemini-2.5-flash  done           3  fix the test\n"+
		"1m8nq3t2ewh    2d  -                 interrupted   12  older\n", out.String())
}

func TestContinueSpecKeepsTheSessionsModelAndReadOnlyTools(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	es := entries(t0,
		session.NewEntry(session.TypeStart, session.StartData{Model: "gemini:gemini-2.5-flash", Command: "ask", Mode: "plan"}, ""),
		session.NewEntry(session.TypeFork, session.ForkData{From: "x", At: 1, Replay: true, Model: "openai:gpt-4.1-mini"}, ""))

	o := &AgentOptions{F: testFactory(), Command: "run"}
	require.NoError(t, o.continueSpec(es, "/nowhere"))
	assert.Equal(t, "openai:gpt-4.1-mini", o.Model, "a replay's model wins over its start entry's")
	assert.Equal(t, "ask", o.Command)
	assert.Equal(t, "plan", o.Mode, "an ask session stays read-only")

	o = &AgentOptions{F: testFactory(), Command: "run", Model: "script:x.json", Mode: "edit"}
	require.NoError(t, o.continueSpec(es, "/nowhere"))
	assert.Equal(t, "script:x.json", o.Model, "-m wins")
	assert.Equal(t, "run", o.Command, "an explicit mode makes it a run")
	assert.Contains(t, o.F.IO.Err.(*bytes.Buffer).String(), "mode: plan → edit", "the change is said")
}
