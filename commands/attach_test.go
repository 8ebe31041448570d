package commands

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/agent/llm/conformance"
	"decode/agent/llm/providers"
)

// testImages returns a real PNG of 2×2 pixels followed by 1 MiB of random
// bytes (which image decoders ignore), so that the session holds a line of
// 2 MiB, and a real 2×2 GIF.
func testImages(t *testing.T) (pngData, gifData []byte) {
	img := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	img.SetColorIndex(1, 1, 1)
	var p, g bytes.Buffer
	require.NoError(t, png.Encode(&p, img))
	require.NoError(t, gif.Encode(&g, img, nil))
	pad := make([]byte, 1<<20)
	_, _ = rand.Read(pad)
	return append(p.Bytes(), pad...), g.Bytes()
}

// TestAttachImagesEndToEnd runs decode ask -f with an image and a text file
// against each adapter's local server, through the real SDK: the image
// travels in the provider's own form (OpenAI image_url data URL, Anthropic
// base64 image block, Gemini inlineData), the text file in the prompt
// with its secret masked. decode resume -f adds a second image and sends
// the first again, rebuilt from the session; decode replay sends both again.
func TestAttachImagesEndToEnd(t *testing.T) {
	pngData, gifData := testImages(t)
	pngB64, gifB64 := base64.StdEncoding.EncodeToString(pngData), base64.StdEncoding.EncodeToString(gifData)
	const secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUv12"
	marks := map[string]string{"openai": `"type":"image_url"`, "anthropic": `"type":"image"`, "gemini": `"inlineData"`}
	wire := map[string]string{
		"openai":    `"url":"data:image/png;base64,` + pngB64 + `"`,
		"anthropic": `"media_type":"image/png"`,
		"gemini":    `"mimeType":"image/png"`,
	}
	for _, name := range []string{"openai", "anthropic", "gemini"} {
		t.Run(name, func(t *testing.T) {
			p, ok := providers.Find(name)
			require.True(t, ok)
			dir := filepath.Join("..", "agent", "llm", p.Adapter(), "testdata")
			fx := conformance.Load(t, dir)
			srv := conformance.NewServer(t, dir, fx.Path)
			for range 4 {
				srv.Queue(fx.Text.Reply)
			}
			base := srv.URL
			if p.Adapter() == "openai" {
				base += "/v1"
			}
			f0, _, _ := providerTestFactory(t, nil)
			work, err := f0.Getwd()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(work, "shot.png"), pngData, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(work, "dot.gif"), gifData, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("my notes\ntoken="+secret+"\n"), 0o644))
			env := map[string]string{p.BaseEnv: base, p.KeyEnv[0]: "test-key-" + name, "DECODE_STORE": filepath.Join(work, "store")}
			run := func(args ...string) (string, string, int) {
				f, out, errb := providerTestFactory(t, env)
				f.Getwd = func() (string, error) { return work, nil }
				code := Main(append([]string{"decode"}, args...), f)
				return out.String(), errb.String(), code
			}
			model := name + ":" + fx.Model

			_, stderr, code := run("ask", "-q", "-m", model, "-f", "shot.png", "what is this?", "-f", "notes.txt")
			require.Equal(t, 0, code, stderr)
			_, stderr, code = run("resume", "-q", "-f", "dot.gif", "and this one?")
			require.Equal(t, 0, code, stderr)
			_, stderr, code = run("replay", "-q", "@", "-m", model)
			require.Equal(t, 0, code, stderr)

			// The session with its 2 MiB line reads back whole.
			out, stderr, code := run("log", "--check")
			require.Equal(t, 0, code, "log --check: %s%s", out, stderr)
			out, stderr, code = run("log", "@~1")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, `<image path="dot.gif" type="image/gif"/>`, "the transcript names the images")

			reqs := srv.Requests()
			require.Len(t, reqs, 4, "ask, resume, and replay's two turns")
			for i, want := range []struct{ png, gif int }{{1, 0}, {1, 1}, {1, 0}, {1, 1}} {
				body := string(reqs[i].Body)
				assert.Equal(t, want.png, strings.Count(body, pngB64), "request %d: the PNG, sent once", i)
				assert.Equal(t, want.gif, strings.Count(body, gifB64), "request %d: the GIF", i)
				assert.Equal(t, want.png+want.gif, strings.Count(body, marks[name]), "request %d: one %s part per image", i, marks[name])
				assert.Contains(t, body, wire[name], "request %d: in the provider's form", i)
				assert.Contains(t, body, "my notes", "request %d: the text file is in the prompt", i)
				assert.NotContains(t, body, secret, "request %d: the text file's secret is masked", i)
			}
		})
	}
}
