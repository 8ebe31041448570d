package commands

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// testImages returns a real PNG of 2×2 pixels followed by 96 KiB of random
// bytes (which image decoders ignore), so that the session holds a line of
// about 200 KiB, past a 64 KiB chunk, and a real 2×2 GIF.
func testImages(t *testing.T) (pngData, gifData []byte) {
	img := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	img.SetColorIndex(1, 1, 1)
	var p, g bytes.Buffer
	require.NoError(t, png.Encode(&p, img))
	require.NoError(t, gif.Encode(&g, img, nil))
	pad := make([]byte, 96<<10)
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

			// The session with its long line reads back whole.
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

// TestReadAttachments tells text from images by content, not by name, and
// refuses what it cannot send.
func TestReadAttachments(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"photo.txt":  "\xff\xd8\xff\xe0\x00\x10JFIF\x00",     // a JPEG whatever its name
		"anim":       "RIFF\x10\x00\x00\x00WEBPVP8 \x00\x00", // a WebP
		"latin1.txt": "caf\xe9\n",                            // text, not UTF-8
		"tabs.tsv":   "a\tb\r\nc\td\f\x1b[0m\n",              // text with tabs, CRLF, form feed, escape
		"doc.pdf":    "%PDF-1.7\n\x00\x01binary",             // binary
		"big.txt":    strings.Repeat("x", 101),
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	a, err := readAttachments(dir, []string{"photo.txt", "anim", "latin1.txt", "tabs.tsv"}, 100)
	require.NoError(t, err)
	require.Len(t, a.files, 4)
	assert.Equal(t, "image/jpeg", a.files[0].MIME)
	assert.Equal(t, []byte(files["photo.txt"]), []byte(a.files[0].Image))
	assert.Equal(t, "image/webp", a.files[1].MIME)
	assert.Equal(t, "text/plain; charset=utf-8", a.files[2].MIME)
	assert.Empty(t, a.files[2].Image, "a text file's bytes are in the prompt, not kept twice")
	assert.Equal(t, int64(5), a.files[2].Size)
	sum := sha256.Sum256([]byte(files["latin1.txt"]))
	assert.Equal(t, hex.EncodeToString(sum[:]), a.files[2].SHA256, "the hash of the bytes as read")
	assert.Equal(t, []string{"photo.txt", "anim"}, a.images())
	assert.Equal(t, "look\n\n"+
		`<image path="photo.txt" type="image/jpeg"/>`+"\n\n"+
		`<image path="anim" type="image/webp"/>`+"\n\n"+
		"<file path=\"latin1.txt\">\ncaf\uFFFD\n</file>\n\n"+
		"<file path=\"tabs.tsv\">\na\tb\r\nc\td\f\x1b[0m\n</file>", a.prompt("look"))

	for _, c := range []struct{ path, msg string }{
		{"doc.pdf", "-f doc.pdf is a binary file (application/pdf), neither text nor a PNG, JPEG, GIF or WebP image"},
		{"big.txt", "-f big.txt is larger than 100 bytes; nothing was sent. Raise the limit with --max-stdin BYTES"},
		{"none.txt", "-f none.txt: no such file"},
		{".", "-f . is a directory"},
	} {
		_, err := readAttachments(dir, []string{"latin1.txt", c.path}, 100)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, c.path)
		assert.Contains(t, ue.Msg, c.msg)
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "latin1.txt"), 0))
	if _, err := os.ReadFile(filepath.Join(dir, "latin1.txt")); err == nil {
		t.Log("running as root: an unreadable file cannot be made")
	} else {
		_, err := readAttachments(dir, []string{"latin1.txt"}, 100)
		assert.ErrorContains(t, err, "-f latin1.txt: cannot read it (permission denied)")
	}
}
