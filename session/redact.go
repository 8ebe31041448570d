package session

import (
	"bytes"
	"os"

	"decode/secrets"
)

// Redacted replaces a secret in a stored line.
const Redacted = secrets.Mask

// SetRedactor sets the redactor every line and commit message goes through
// (nil masks secret shapes only). With modelSeesShapes the entries kept in
// memory, from which the model's context is built, keep text that merely
// has a secret's shape; what is stored is redacted in full either way.
//
// A store may be shared by the runs of one process (decode acp's sessions
// in one directory), so the setting is swapped atomically.
func (s *Store) SetRedactor(r *secrets.Redactor, modelSeesShapes bool) {
	s.redaction.Store(&redaction{r, modelSeesShapes})
}

// redaction is a store's redactor and whether the model sees shapes.
type redaction struct {
	r          *secrets.Redactor
	seesShapes bool
}

func (s *Store) redacting() redaction {
	if r := s.redaction.Load(); r != nil {
		return *r
	}
	return redaction{}
}

// redact redacts an encoded line in full: known values and shapes.
func (s *Store) redact(line []byte) []byte { return s.redacting().r.Redact(line) }

// redactLine returns the line to store and the line the entry in memory is
// read back from (the same unless the model may see shapes). A line whose
// redaction as text broke its JSON is redacted string by string instead.
func (s *Store) redactLine(line []byte) (stored, memory []byte) {
	r := s.redacting()
	stored = r.r.RedactLine(line)
	if !r.seesShapes {
		return stored, stored
	}
	return stored, r.r.RedactValues(line)
}

// holdsSecret reports whether the file at path holds text the redactor
// would mask.
func (s *Store) holdsSecret(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	red := s.redacting().r.Redact(data)
	return len(red) != len(data) || !bytes.Equal(red, data)
}
