package session

import (
	"encoding/json"
	"strings"
	"testing"

	"decode/agent/llm"
	"decode/secrets"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool's image is written in hex, which no redaction can break: in base64
// its bytes can spell a key's shape (AIza…), which the redactor masks.
func TestToolResultImageSurvivesRedaction(t *testing.T) {
	// Bytes whose base64 is "AIzaAAAA…": the shape of a Google key.
	img := append([]byte{0x00, 0x8c, 0xda}, make([]byte, 60)...)
	d := ToolResultData{ToolResult: llm.ToolResult{CallID: "c1", Name: "mcp_shot", Content: "an image", Images: []llm.Image{{MIME: "image/png", Data: img}}}, Ms: 5}
	line, err := json.Marshal(d)
	require.NoError(t, err)
	assert.NotContains(t, string(line), `"data"`, "images are not written in base64")
	red := secrets.NewRedactor()
	masked := red.String(string(line))
	var back ToolResultData
	require.NoError(t, json.Unmarshal([]byte(masked), &back))
	require.Len(t, back.Images, 1)
	assert.Equal(t, img, back.Images[0].Data)
	assert.Equal(t, "image/png", back.Images[0].MIME)
	assert.Equal(t, "c1", back.CallID)
	assert.Equal(t, int64(5), back.Ms)

	// The base64 form is exactly what the redactor breaks.
	b64, err := json.Marshal(llm.Image{MIME: "image/png", Data: img})
	require.NoError(t, err)
	require.True(t, strings.Contains(string(b64), "AIza"))
	assert.NotEqual(t, string(b64), red.String(string(b64)))
}

// Sessions written before hex hold images in base64 under "data".
func TestToolResultImageReadsOldBase64(t *testing.T) {
	old := `{"call_id":"c1","name":"mcp_shot","content":"x","images":[{"mime":"image/gif","data":"R0lGOA=="}],"ms":3}`
	var d ToolResultData
	require.NoError(t, json.Unmarshal([]byte(old), &d))
	require.Len(t, d.Images, 1)
	assert.Equal(t, []byte("GIF8"), d.Images[0].Data)
	assert.Equal(t, "image/gif", d.Images[0].MIME)
}
