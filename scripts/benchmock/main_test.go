package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunk is what a client reads of one streamed chat.completion.chunk.
type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// answer is a streamed response put together as a client does.
type answer struct {
	text, callID, callName, callArgs, finish string
	usage, done                              bool
}

func post(t *testing.T, url, body string) answer {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var a answer
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		require.True(t, ok, "every event is a data line: %q", line)
		require.False(t, a.done, "nothing comes after [DONE]")
		if data == "[DONE]" {
			a.done = true
			continue
		}
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(data), &c))
		assert.Equal(t, "chat.completion.chunk", c.Object)
		if c.Usage != nil {
			assert.Empty(t, c.Choices, "usage comes in a chunk of its own")
			assert.Positive(t, c.Usage.PromptTokens)
			a.usage = true
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				a.text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					assert.Empty(t, a.callID, "a call's id comes once, in its first delta")
					a.callID, a.callName = tc.ID, tc.Function.Name
				}
				a.callArgs += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				a.finish = *ch.FinishReason
			}
		}
	}
	require.NoError(t, sc.Err())
	return a
}

func TestBenchTask(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(newHandler(&log))
	defer srv.Close()
	tools := `[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"read"}}]`

	first := post(t, srv.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"tools":`+tools+`,
		"messages":[{"role":"system","content":"sys"},{"role":"user","content":"Make out.txt contain in.txt in upper case, then say DONE."}]}`)
	assert.Equal(t, "tool_calls", first.finish)
	assert.Equal(t, "bash", first.callName)
	assert.NotEmpty(t, first.callID)
	var args struct{ Command string }
	require.NoError(t, json.Unmarshal([]byte(first.callArgs), &args), "the pieces of the arguments make one JSON object")
	assert.Equal(t, benchCommand, args.Command)
	assert.True(t, first.usage, "usage was asked for")
	assert.True(t, first.done)

	second := post(t, srv.URL, `{"model":"m","stream":true,"tools":`+tools+`,"messages":[
		{"role":"user","content":"Make out.txt contain in.txt in upper case, then say DONE."},
		{"role":"assistant","tool_calls":[{"id":"`+first.callID+`","type":"function","function":{"name":"bash","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"`+first.callID+`","content":"exit 0"}]}`)
	assert.Equal(t, "DONE", second.text)
	assert.Equal(t, "stop", second.finish)
	assert.Empty(t, second.callName)
	assert.False(t, second.usage, "no usage unless asked for")
	assert.True(t, second.done)

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 2, "one log line a request")
	var l logLine
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &l))
	assert.Equal(t, 2, l.NTools)
	assert.Positive(t, l.BodyBytes)
	assert.Positive(t, l.TS)
}

func TestOtherPaths(t *testing.T) {
	srv := httptest.NewServer(newHandler(&bytes.Buffer{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
