package commands

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/agent/llm/providers"
	"decode/session"
)

// maxImage caps an attached image: 5 MiB, Anthropic's limit per image and
// the lowest of the providers'.
const maxImage = 5 << 20

// imageTypes are the image types -f sends as images, told by their content.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// fileList is the value of -f: every use adds one path, as given (a
// comma is part of a file name, not a separator as in a string slice).
type fileList []string

// serializedFiles starts the form in which urfave/cli copies the value of
// -f to --file (Serialize): the whole list, which replaces it.
const serializedFiles = "\x00files:"

func (l *fileList) Set(v string) error {
	if rest, ok := strings.CutPrefix(v, serializedFiles); ok {
		return json.Unmarshal([]byte(rest), (*[]string)(l))
	}
	*l = append(*l, v)
	return nil
}

func (l *fileList) String() string { return strings.Join(*l, ", ") }

// Serialize implements cli.Serializer.
func (l *fileList) Serialize() string {
	b, _ := json.Marshal([]string(*l))
	return serializedFiles + string(b)
}

// attachFlag is -f FILE, for the commands that take a prompt.
func attachFlag() cli.Flag {
	return &cli.GenericFlag{Name: "file", Aliases: []string{"f"}, Value: &fileList{},
		Usage: "attach `FILE` to the prompt (repeatable): a text file as text, a PNG, JPEG, GIF or WebP image as an image (for models that take images)"}
}

// attachedFiles returns the paths given with -f.
func attachedFiles(c *cli.Context) []string {
	if l, ok := c.Generic("file").(*fileList); ok && l != nil {
		return *l
	}
	return nil
}

// attachments are the files read for -f: every one recorded, the text
// ones also as the <file> blocks that go into the prompt.
type attachments struct {
	files []session.Attachment
	text  []string
}

// readAttachments reads the -f files, relative to dir. A text file may be
// at most limit bytes (--max-stdin), an image maxImage; a file that is
// missing, unreadable, too large, or neither text nor a known image is a
// usage error naming it, before anything is sent or recorded.
func readAttachments(dir string, paths []string, limit int64) (*attachments, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = defaultMaxStdin
	}
	a := &attachments{}
	for _, p := range paths {
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(dir, full)
		}
		data, err := readAttachment(full, max(limit, maxImage))
		if err != nil {
			return nil, attachError(p, err)
		}
		sum := sha256.Sum256(data)
		f := session.Attachment{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
		if mime := http.DetectContentType(data); imageTypes[mime] {
			if len(data) > maxImage {
				return nil, usageErrorf("-f %s: the image is larger than %d bytes (5 MiB), the most every provider takes; nothing was sent. Scale it down or crop it", p, maxImage)
			}
			f.MIME, f.Image = mime, data
			a.text = append(a.text, fmt.Sprintf("<image path=%s type=%q/>", strconv.Quote(p), mime))
		} else {
			if binary(data) {
				return nil, usageErrorf("-f %s is a binary file (%s), neither text nor a PNG, JPEG, GIF or WebP image; nothing was sent", p, mime)
			}
			if int64(len(data)) > limit {
				return nil, usageErrorf("-f %s is larger than %d bytes; nothing was sent. Raise the limit with --max-stdin BYTES (or max_stdin in config)", p, limit)
			}
			f.MIME = "text/plain; charset=utf-8"
			text := strings.TrimRight(strings.ToValidUTF8(string(data), "\uFFFD"), "\n")
			a.text = append(a.text, fmt.Sprintf("<file path=%s>\n%s\n</file>", strconv.Quote(p), text))
		}
		a.files = append(a.files, f)
	}
	return a, nil
}

// readAttachment reads at most max+1 bytes of the file at path, so that a
// file past every limit is refused without being read whole (it may be a
// pipe: -f <(command)).
func readAttachment(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, errIsDir
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

var errIsDir = errors.New("is a directory")

// attachError says what is wrong with the file path names.
func attachError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, errIsDir):
		return usageErrorf("-f %s is a directory; attach its files one by one", path)
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("-f %s: no such file; nothing was sent", path)
	case errors.As(err, &pe):
		return usageErrorf("-f %s: cannot read it (%v); nothing was sent", path, pe.Err)
	}
	return usageErrorf("-f %s: cannot read it (%v); nothing was sent", path, err)
}

// binary reports whether data holds bytes no text file has: NUL and the
// control characters other than tab, newlines, form feed and escape (the
// ones http.DetectContentType takes for binary data).
func binary(data []byte) bool {
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != 0x1b {
			return true
		}
	}
	return false
}

// prompt adds the attachments to the prompt: each text file in a <file>
// block, each image as a line naming it (its bytes go as an image part).
func (a *attachments) prompt(prompt string) string {
	if a == nil || len(a.text) == 0 {
		return prompt
	}
	parts := append([]string{}, a.text...)
	if strings.TrimSpace(prompt) != "" {
		parts = append([]string{prompt}, parts...)
	}
	return strings.Join(parts, "\n\n")
}

// images returns the attached images' paths.
func (a *attachments) images() []string {
	var out []string
	if a != nil {
		for _, f := range a.files {
			if f.IsImage() {
				out = append(out, f.Path)
			}
		}
	}
	return out
}

// checkModel refuses images for a model known not to take them, before
// any request.
func (a *attachments) checkModel(model string) error {
	imgs := a.images()
	if len(imgs) == 0 || providers.TakesImages(model) {
		return nil
	}
	return usageErrorf("%s is an image, and %s does not take images; nothing was sent. Pick a model that does (-m sonnet, -m flash, -m openai:gpt-4.1-mini) or attach text", imgs[0], model)
}

// forAgent is what the loop records with the prompt.
func (a *attachments) forAgent() *agent.Attached {
	if a == nil {
		return nil
	}
	return agent.NewAttached(a.files)
}

// readFiles reads the -f files once, before the model or the store is
// touched (a resume reads them itself, before it opens its session). A
// command that takes no prompt (run --plan) takes no files.
func (o *AgentOptions) readFiles(dir string, d *driver) error {
	if len(o.Files) == 0 || o.attached != nil {
		return nil
	}
	if d != nil && d.noPrompt {
		return usageErrorf("-f attaches files to a prompt, and decode %s takes none here; attach them where the prompt is given (decode plan -f FILE)", o.Command)
	}
	a, err := readAttachments(dir, o.Files, o.MaxStdin)
	o.attached = a
	return err
}

// unstarted marks a usage error found before the command's --json stream
// started (a resume reads its files before it opens the session), so that
// Main still prints the error and end events a consumer waits for.
func unstarted(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		ue.Flags = true
	}
	return err
}

// acpImage is an image content block as an attachment: one of the image
// types -f takes, base64 data of at most maxImage bytes.
func acpImage(mime, data, name string) (session.Attachment, error) {
	if !imageTypes[mime] {
		return session.Attachment{}, invalidParams("prompt: image %s is %q; decode takes image/png, image/jpeg, image/gif and image/webp", name, mime)
	}
	img, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return session.Attachment{}, invalidParams("prompt: image %s: data is not base64: %v", name, err)
	}
	if len(img) > maxImage {
		return session.Attachment{}, invalidParams("prompt: image %s is larger than %d bytes (5 MiB), the most every provider takes", name, maxImage)
	}
	sum := sha256.Sum256(img)
	return session.Attachment{Path: name, Size: int64(len(img)), SHA256: hex.EncodeToString(sum[:]), MIME: mime, Image: img}, nil
}
