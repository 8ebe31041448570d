package session

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"decode/agent/llm"
)

// Attachment is a file attached to a user message (decode ask -f FILE). A
// text file's content is in the message's Text, in a <file> block naming
// its path, so it is redacted and shown like any other input; an image's
// bytes are kept here, so that a resume or a replay sends the same request.
type Attachment struct {
	// Path is the file as it was given on the command line.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the hex SHA-256 of the file's bytes as read.
	SHA256 string `json:"sha256"`
	// MIME is the sniffed type: text/plain; charset=utf-8, or image/png,
	// image/jpeg, image/gif or image/webp.
	MIME string `json:"mime"`
	// Image holds an image's bytes; empty for a text file.
	Image HexBytes `json:"image,omitempty"`
}

// IsImage reports whether the attachment is an image sent as one.
func (a Attachment) IsImage() bool { return len(a.Image) > 0 }

// Images returns the images among attachments, in order, as a model sees them.
func Images(attachments []Attachment) []llm.Image {
	var out []llm.Image
	for _, a := range attachments {
		if a.IsImage() {
			out = append(out, llm.Image{MIME: a.MIME, Data: a.Image})
		}
	}
	return out
}

// HexBytes is bytes stored as a hex string. An image is stored in hex, not
// base64: every line is redacted before it is written, and base64 can by
// chance hold the shape of a key (AIza… after a '/'), which masking would
// turn into bytes that no longer decode; hex digits hold no secret shape.
type HexBytes []byte

// MarshalJSON encodes b as a hex string.
func (b HexBytes) MarshalJSON() ([]byte, error) {
	return json.Marshal(hex.EncodeToString(b))
}

// UnmarshalJSON decodes a hex string.
func (b *HexBytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	out, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("attachment bytes: %w", err)
	}
	*b = out
	return nil
}
