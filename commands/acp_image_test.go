package commands

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm/conformance"
	"decode/session"
)

// TestACPImagePrompt: an editor's image content block goes to the model as
// -f sends an image (here an OpenAI image_url data URL) and is recorded in
// the session; a type decode does not take, or a model that takes no
// images, is an error the client sees.
func TestACPImagePrompt(t *testing.T) {
	pngData, _ := testImages(t)
	dir, env := acpRepo(t, `{"responses": [{"text": "ok"}]}`)
	fxDir := filepath.Join("..", "agent", "llm", "openai", "testdata")
	fx := conformance.Load(t, fxDir)
	srv := conformance.NewServer(t, fxDir, fx.Path)
	srv.Queue(fx.Text.Reply)
	env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = srv.URL+"/v1", "test-key-openai"
	c := startACP(t, dir, env, "-m", "openai:"+fx.Model, "--sandbox", "off")
	init := result(t, first(c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})))
	assert.Equal(t, true, init["agentCapabilities"].(map[string]any)["promptCapabilities"].(map[string]any)["image"])
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))["sessionId"].(string)

	b64 := base64.StdEncoding.EncodeToString(pngData)
	prompt := func(blocks ...any) map[string]any {
		resp, _ := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": blocks})
		return resp
	}
	text := map[string]any{"type": "text", "text": "what is on this screen?"}
	resp := prompt(text, map[string]any{"type": "image", "mimeType": "image/png", "data": b64, "uri": "file:///tmp/shot.png"})
	assert.Equal(t, "end_turn", result(t, resp)["stopReason"], "stderr: %s", c.stderr.String())
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Contains(t, string(reqs[0].Body), `"url":"data:image/png;base64,`+b64+`"`)
	assert.Contains(t, string(reqs[0].Body), `file:///tmp/shot.png`, "the text names the image")

	st, err := session.OpenStore(dir, session.Env{Getenv: func(k string) string { return env[k] }, Home: env["HOME"]})
	require.NoError(t, err)
	s, err := st.Open(context.Background(), id)
	require.NoError(t, err)
	var user session.UserData
	for _, e := range s.Entries() {
		if e.Type == session.TypeUser {
			require.NoError(t, e.Decode(&user))
		}
	}
	require.Len(t, user.Attachments, 1)
	assert.Equal(t, pngData, []byte(user.Attachments[0].Image))

	// session/load streams the image back with the prompt.
	resp, history := c.request("session/load", map[string]any{"sessionId": id, "cwd": dir, "mcpServers": []any{}})
	result(t, resp)
	var images []map[string]any
	for _, u := range history {
		if content, ok := u["content"].(map[string]any); ok && u["sessionUpdate"] == "user_message_chunk" && content["type"] == "image" {
			images = append(images, content)
		}
	}
	require.Len(t, images, 1, "history: %v", kinds(history))
	assert.Equal(t, map[string]any{"type": "image", "mimeType": "image/png", "data": b64, "uri": "file:///tmp/shot.png"}, images[0])

	resp = prompt(text, map[string]any{"type": "image", "mimeType": "image/tiff", "data": "AAAA"})
	require.NotNil(t, resp["error"])
	assert.Contains(t, resp["error"].(map[string]any)["message"], `"image/tiff"; decode takes image/png, image/jpeg, image/gif and image/webp`)
	resp = prompt(text, map[string]any{"type": "image", "mimeType": "image/png", "data": "not base64!"})
	require.NotNil(t, resp["error"])
	assert.True(t, strings.Contains(resp["error"].(map[string]any)["message"].(string), "data is not base64"))
	assert.Len(t, srv.Requests(), 1, "a refused prompt sends nothing")
}

// TestACPImageToTextOnlyModel: the scripted model takes no images; the
// client gets the error and the model is not asked.
func TestACPImageToTextOnlyModel(t *testing.T) {
	pngData, _ := testImages(t)
	dir, env := acpRepo(t, `{"responses": [{"text": "ok"}]}`)
	c := startACP(t, dir, env, "-m", "script:"+filepath.Join(dir, "script.json"), "--sandbox", "off")
	result(t, first(c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})))
	id := result(t, first(c.request("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})))["sessionId"].(string)
	resp, _ := c.request("session/prompt", map[string]any{"sessionId": id, "prompt": []any{
		map[string]any{"type": "text", "text": "look"},
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(pngData)},
	}})
	require.NotNil(t, resp["error"], "resp: %v", resp)
	assert.Contains(t, resp["error"].(map[string]any)["message"], "does not take images")
}
