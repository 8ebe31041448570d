package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent"
)

const verdictFile = `{"type":"object","properties":{"breaking":{"type":"boolean"},"why":{"type":"string"}},"required":["breaking","why"]}`

func writeSchema(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schema.json")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestLoadSchema(t *testing.T) {
	none, err := loadSchema("", "")
	assert.NoError(t, err)
	assert.Nil(t, none, "no --schema, no schema")

	for name, path := range map[string]string{
		"missing file":   filepath.Join(t.TempDir(), "nope.json"),
		"not JSON":       writeSchema(t, "{type: object"),
		"bad keyword":    writeSchema(t, `{"type": 3}`),
		"remote $ref":    writeSchema(t, `{"$ref": "https://example.com/s.json"}`),
		"not an object":  writeSchema(t, `[1, 2]`),
		"trailing bytes": writeSchema(t, `{"type":"object"} x`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadSchema(path, "")
			var ue *UsageError
			require.ErrorAs(t, err, &ue, "a bad schema file is a usage error (exit 2)")
			assert.Contains(t, ue.Msg, "--schema")
		})
	}

	s, err := loadSchema(writeSchema(t, "{\n  \"type\": \"array\"\n}\n"), "")
	require.NoError(t, err)
	var o agent.Options
	o.System = "base"
	s.Apply(&o)
	assert.JSONEq(t, `{"type":"array"}`, string(o.ResponseSchema))
	assert.Equal(t, `{"type":"array"}`, string(o.ResponseSchema), "compact")
	assert.True(t, strings.HasPrefix(o.System, "base\n\n# Answer format"), "the instruction follows the system prompt")
	assert.Contains(t, o.System, `{"type":"array"}`)
}

// TestSchemaReachesProvider runs decode ask --schema against a local
// OpenAI-compatible server: the request carries the schema as
// response_format, and only the validated JSON reaches stdout.
func TestSchemaReachesProvider(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{`{\"breaking\": `, `false, \"why\": \"only docs\"}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"finish_reason\":null}]}\n\n", piece)
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := testRepo(t, "verdict.schema.json", verdictFile)
	env := decodeEnv(dir, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	stdout, stderr, code := decodeRun(t, dir, env, "-old\n+new\n", "ask", "--schema", "verdict.schema.json", "-m", "openai:gpt-test", "does this break the API?")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Equal(t, `{"breaking":false,"why":"only docs"}`+"\n", stdout, "only the JSON, on one line")

	var req struct {
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict bool            `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(<-bodies, &req))
	assert.Equal(t, "json_schema", req.ResponseFormat.Type)
	assert.JSONEq(t, verdictFile, string(req.ResponseFormat.JSONSchema.Schema))
	assert.False(t, req.ResponseFormat.JSONSchema.Strict)
	require.NotEmpty(t, req.Messages)
	assert.Contains(t, req.Messages[0].Content, verdictFile, "the system prompt states the schema too")
}
