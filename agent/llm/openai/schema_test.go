package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm/openai"
)

func TestRequestResponseSchema(t *testing.T) {
	const object = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	tests := []struct {
		name, provider, schema string
		want                   string // the response_format sent; "" for none
	}{
		{name: "json_schema", provider: "openai", schema: object,
			want: `{"type":"json_schema","json_schema":{"name":"answer","schema":` + object + `,"strict":false}}`},
		{name: "compatible server", provider: "ollama", schema: object,
			want: `{"type":"json_schema","json_schema":{"name":"answer","schema":` + object + `,"strict":false}}`},
		{name: "deepseek knows json_object", provider: "deepseek", schema: object, want: `{"type":"json_object"}`},
		{name: "array root is not sent", provider: "openai", schema: `{"type":"array","items":{"type":"string"}}`},
		{name: "no schema", provider: "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, reqs := server(t, sse(t, "text.sse"))
			m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Provider: tt.provider, HTTPClient: srv.Client()})
			require.NoError(t, err)
			req := hello
			req.ResponseSchema = json.RawMessage(tt.schema)
			done(t, collect(m, req))
			var body struct {
				ResponseFormat json.RawMessage `json:"response_format"`
			}
			require.NoError(t, json.Unmarshal((<-reqs).body, &body))
			if tt.want == "" {
				assert.Empty(t, body.ResponseFormat, "no response_format")
				return
			}
			assert.JSONEq(t, tt.want, string(body.ResponseFormat))
		})
	}
}
