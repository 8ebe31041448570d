package session

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"
)

// idAlphabet is Crockford's base32 in lower case. Its characters are in
// ascending byte order, so fixed-width ids sort like the numbers they encode.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

const (
	idTimeChars = 9 // 45 bits of unix milliseconds: good until the year 3084
	idRandChars = 2 // 10 random bits tell apart sessions of the same millisecond
	idLen       = idTimeChars + idRandChars
)

// newID returns a fresh session id: creation time in milliseconds, then randomness,
// so that sorting ids by name sorts sessions by creation.
func newID(now time.Time) (string, error) {
	var rnd [idRandChars]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	b := make([]byte, idLen)
	ms := uint64(max(now.UnixMilli(), 0))
	for i := idTimeChars - 1; i >= 0; i-- {
		b[i] = idAlphabet[ms&31]
		ms >>= 5
	}
	for i, r := range rnd {
		b[idTimeChars+i] = idAlphabet[r&31]
	}
	return string(b), nil
}

// idTime returns the creation time encoded in a session id, and false for a
// name that is not an id of this form.
func idTime(id string) (time.Time, bool) {
	if len(id) != idLen {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < idLen; i++ {
		v := idDigit(id[i])
		if v < 0 {
			return time.Time{}, false
		}
		if i < idTimeChars {
			ms = ms<<5 | int64(v)
		}
	}
	return time.UnixMilli(ms).UTC(), true
}

func idDigit(c byte) int {
	for i := 0; i < len(idAlphabet); i++ {
		if idAlphabet[i] == c {
			return i
		}
	}
	return -1
}

// LooksLikeRef reports whether s is written like a session reference rather
// than prose: "@" or "@~N", a full ref name, or a word of id characters with
// at least one digit (ids start with a digit for centuries). `decode resume
// WORD` uses it to tell a mistyped session from a one-word prompt.
func LooksLikeRef(s string) bool {
	if _, ok := parseRelative(s); ok || strings.HasPrefix(s, refPrefix) {
		return true
	}
	digit := false
	for i := 0; i < len(s); i++ {
		if idDigit(s[i]) < 0 {
			return false
		}
		digit = digit || s[i] <= '9'
	}
	return digit
}
