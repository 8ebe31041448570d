package openai

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func filtered(t *testing.T, in string, bufSize int, oneByte bool) string {
	t.Helper()
	var r io.Reader = strings.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	f := &commentFilter{r: bufio.NewReaderSize(r, bufSize), body: io.NopCloser(nil), lineStart: true}
	out, err := io.ReadAll(iotest.OneByteReader(f))
	require.NoError(t, err)
	return string(out)
}

func TestCommentFilter(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct{ name, in, want string }{
		{"no comments", "data: {}\n\ndata: [DONE]\n\n", "data: {}\n\ndata: [DONE]\n\n"},
		{"leading comment", ": OPENROUTER PROCESSING\n\ndata: {}\n\n", "\ndata: {}\n\n"},
		{"comment between events", "data: 1\n\n: keep-alive\n\ndata: 2\n\n", "data: 1\n\n\ndata: 2\n\n"},
		{"CRLF", ": ping\r\n\r\ndata: 1\r\n\r\n", "\r\ndata: 1\r\n\r\n"},
		{"colon inside a line is kept", "data: {\"a\":\":b\"}\n", "data: {\"a\":\":b\"}\n"},
		{"long comment", ": " + long + "\ndata: 1\n", "data: 1\n"},
		{"long data line", "data: " + long + "\n: c\n", "data: " + long + "\n"},
		{"long data line with colon at a buffer edge", "data: " + long + ":" + long + "\n", "data: " + long + ":" + long + "\n"},
		{"no final newline", "data: 1\n: cut", "data: 1\n"},
		{"data without final newline", "data: 1", "data: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{16, 4096} {
				for _, oneByte := range []bool{false, true} {
					assert.Equal(t, tt.want, filtered(t, tt.in, size, oneByte), "buffer %d, one byte %v", size, oneByte)
				}
			}
		})
	}
}
