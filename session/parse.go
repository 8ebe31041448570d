package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// parseEntry decodes one line. Unknown types and fields are accepted (the
// line's bytes stay as they are in the store); an entry needs an id and a type.
//
// Loading a long session is mostly this function, so it validates the line
// with json.Valid and then picks out the fields by hand, which is about three
// times faster than json.Unmarshal into an Entry (measured on 600-byte lines).
func parseEntry(line []byte) (Entry, error) {
	if !json.Valid(line) {
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return Entry{}, err // the decoder's message says where it broke
		}
		return Entry{}, errors.New("invalid JSON")
	}
	e, err := pickFields(line)
	if err != nil {
		return Entry{}, err
	}
	if e.ID <= 0 {
		return Entry{}, errors.New("entry has no id")
	}
	if e.Type == "" {
		return Entry{}, errors.New("entry has no type")
	}
	return e, nil
}

// pickFields reads the known fields of a line that is valid JSON.
func pickFields(line []byte) (Entry, error) {
	var e Entry
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return e, errors.New("entry is not a JSON object")
	}
	i = skipSpace(line, i+1)
	for line[i] != '}' {
		kEnd := skipString(line, i)
		key, err := stringValue(line[i:kEnd])
		if err != nil {
			return e, err
		}
		i = skipSpace(line, skipSpace(line, kEnd)+1) // past the colon
		vEnd := skipValue(line, i)
		if err := setField(&e, key, line[i:vEnd]); err != nil {
			return e, err
		}
		i = skipSpace(line, vEnd)
		if line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	return e, nil
}

func setField(e *Entry, key string, val []byte) error {
	var err error
	switch key {
	case "v":
		e.V, err = intValue(val)
	case "id":
		e.ID, err = intValue(val)
	case "parent":
		e.Parent, err = intValue(val)
	case "ts":
		err = e.TS.UnmarshalJSON(val)
	case "type":
		e.Type, err = stringValue(val)
	case "data":
		e.Data = bytes.Clone(val)
	default:
		return nil // unknown fields stay in the stored line
	}
	if err != nil {
		return fmt.Errorf("field %q: %w", key, err)
	}
	return nil
}

func intValue(val []byte) (int, error) {
	if string(val) == "null" {
		return 0, nil
	}
	return strconv.Atoi(string(val))
}

func stringValue(val []byte) (string, error) {
	if string(val) == "null" {
		return "", nil
	}
	if val[0] != '"' {
		return "", errors.New("not a string")
	}
	if bytes.IndexByte(val, '\\') < 0 {
		return string(val[1 : len(val)-1]), nil
	}
	var s string
	err := json.Unmarshal(val, &s)
	return s, err
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b) // unreachable for valid JSON
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return j
}
