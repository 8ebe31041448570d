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
func (s *Store) SetRedactor(r *secrets.Redactor, modelSeesShapes bool) {
	s.redactor, s.modelSeesShapes = r, modelSeesShapes
}

// redact redacts an encoded line in full: known values and shapes.
func (s *Store) redact(line []byte) []byte { return s.redactor.Redact(line) }

// redactLine returns the line to store and the line the entry in memory is
// read back from (the same unless the model may see shapes). A line whose
// redaction as text broke its JSON is redacted string by string instead.
func (s *Store) redactLine(line []byte) (stored, memory []byte) {
	stored = s.redactor.RedactLine(line)
	if !s.modelSeesShapes {
		return stored, stored
	}
	return stored, s.redactor.RedactValues(line)
}

// holdsSecret reports whether the file at path holds text the redactor
// would mask.
func (s *Store) holdsSecret(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	red := s.redactor.Redact(data)
	return len(red) != len(data) || !bytes.Equal(red, data)
}
