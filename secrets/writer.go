package secrets

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// maxHold bounds what a Writer holds back waiting for the end of a line or
// of a private key.
const maxHold = 64 << 10

// Writer redacts what passes through it to w. A secret can be split across
// writes (a streamed answer arrives a few bytes at a time), so it passes on
// whole lines only, holding back the rest until a newline, a carriage return
// (a spinner's frame), the end of an open private key block, or Flush.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	r   *Redactor
	buf []byte
}

// Writer returns a redacting writer to w.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{w: w, r: r} }

// Write buffers p and passes on the complete lines, redacted. It reports p
// as written in full once buffered.
func (x *Writer) Write(p []byte) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.buf = append(x.buf, p...)
	cut := bytes.LastIndexAny(x.buf, "\n\r") + 1
	if cut > 0 {
		cut = holdOpenKey(x.buf, cut)
	}
	if len(x.buf) > maxHold {
		cut = len(x.buf)
	}
	if cut == 0 {
		return len(p), nil
	}
	err := x.emit(cut)
	return len(p), err
}

// Flush passes on everything held back.
func (x *Writer) Flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.buf) == 0 {
		return nil
	}
	return x.emit(len(x.buf))
}

func (x *Writer) emit(cut int) error {
	out := x.r.Redact(x.buf[:cut])
	_, err := x.w.Write(out)
	x.buf = append(x.buf[:0], x.buf[cut:]...)
	return err
}

// holdOpenKey moves cut back to the start of a private key block that has
// begun but not ended before it, so the key is redacted whole.
func holdOpenKey(b []byte, cut int) int {
	i := bytes.LastIndex(b[:cut], pemBegin)
	if i < 0 {
		return cut
	}
	rest := b[i:]
	if nl := bytes.IndexAny(rest, "\n\\"); nl < 0 || !bytes.Contains(rest[:nl], []byte("PRIVATE KEY")) {
		return cut
	}
	if bytes.Contains(rest, pemEnd) {
		return cut
	}
	return i
}

// RedactLine redacts one JSON document as text, and falls back to
// RedactJSON only when that broke it, so the common line keeps its bytes
// (and its keys their order).
func (r *Redactor) RedactLine(doc []byte) []byte {
	red := r.Redact(doc)
	if len(red) == len(doc) && bytes.Equal(red, doc) || json.Valid(red) {
		return red
	}
	if out, err := r.RedactJSON(doc); err == nil {
		return out
	}
	return red
}

// RedactJSON redacts every string in a JSON document, decoded, so the
// result is always valid JSON (a mask can never swallow half an escape).
// It is the fallback for lines whose redaction as text broke them.
func (r *Redactor) RedactJSON(doc []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v = r.redactAny(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (r *Redactor) redactAny(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case []any:
		for i := range v {
			v[i] = r.redactAny(v[i])
		}
	case map[string]any:
		for k, e := range v {
			v[k] = r.redactAny(e)
		}
	}
	return v
}
