package session

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/secrets"
)

// TestAttachedImageSurvivesRedaction: an image whose base64 would hold the
// shape of a Google key ("/AIza…") is stored in hex and reads back byte for
// byte from a store that redacts every line, and a reopened session has it.
func TestAttachedImageSurvivesRedaction(t *testing.T) {
	img, err := base64.StdEncoding.DecodeString("iVBO/AIzaSyA1b2C3d4E5f6G7h8I9j0KLMNOPQRSTUVWxyz0")
	require.NoError(t, err)
	require.Contains(t, string(secrets.NewRedactor().Redact([]byte(base64.StdEncoding.EncodeToString(img)))), secrets.Mask,
		"the image's base64 has a key's shape")

	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetRedactor(secrets.NewRedactor(), false)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	att := Attachment{Path: "shot.png", Size: int64(len(img)), SHA256: "00", MIME: "image/png", Image: img}
	require.NoError(t, s.Append(ctx, NewEntry(TypeUser, UserData{Text: "look", Attachments: []Attachment{att}}, "look")))

	re, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	require.Empty(t, re.Problems())
	var d UserData
	require.NoError(t, re.Entries()[0].Decode(&d))
	require.Len(t, d.Attachments, 1)
	assert.Equal(t, img, []byte(d.Attachments[0].Image), "the bytes read back unchanged")
	assert.True(t, d.Attachments[0].IsImage())
}
