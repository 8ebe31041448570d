package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm"
)

// TestUserImages: a user message with images travels as content parts, the
// text then each image as an image_url data URL; one without stays a plain
// string.
func TestUserImages(t *testing.T) {
	srv, reqs := server(t, sse(t, "text.sse"))
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "before"},
		{Role: llm.RoleAssistant, Text: "ok"},
		{Role: llm.RoleUser, Text: "what is in these?", Images: []llm.Image{
			{MIME: "image/png", Data: []byte("PNG")}, {MIME: "image/webp", Data: []byte("WEBP")}}},
	}}
	collect(newModel(t, srv, ""), req)
	got := <-reqs
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(got.body, &body), "request body is JSON: %s", got.body)
	require.Len(t, body.Messages, 3)
	assert.JSONEq(t, `{"role":"user","content":"before"}`, string(body.Messages[0]), "no images: a plain string")
	assert.JSONEq(t, `{"role":"user","content":[
		{"type":"text","text":"what is in these?"},
		{"type":"image_url","image_url":{"url":"data:image/png;base64,UE5H"}},
		{"type":"image_url","image_url":{"url":"data:image/webp;base64,V0VCUA=="}}]}`, string(body.Messages[2]))
}
