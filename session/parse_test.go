package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEntryAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"v":1,"id":1,"ts":"2026-01-01T00:00:00Z","type":"user","data":{"text":"hi"}}`,
		` { "v" : 1 , "id" : 7 , "parent" : 6 , "ts" : "2026-01-01T00:00:00.123456789Z" , "type" : "x" } `,
		`{"id":2,"type":"user","data":{"text":"quote \" and \\\\\" brace } ] { [ \\"}}`,
		`{"data":["a",{"b":[1,2,{"c":"}"}]},null],"id":3,"type":"tool_result","extra":{"x":[true,false,null,-1.5e3]}}`,
		`{"id":4,"type":"t\u00e9\"st","data":"just a string","ts":null,"parent":null}`,
		`{"\u0069d":5,"type":"escaped key","data":null}`,
		`{"id":6,"type":"dup","type":"last wins"}`,
		`{"id":7,"type":"unicode ✓ \ud83d\ude00","data":{"k":"\\"}}`,
	}
	for _, l := range lines {
		var want Entry
		require.NoError(t, json.Unmarshal([]byte(l), &want), l)
		got, err := parseEntry([]byte(l))
		require.NoError(t, err, l)
		if string(want.Data) != "" || string(got.Data) != "" {
			assert.JSONEq(t, string(want.Data), string(got.Data), l)
		}
		want.Data, got.Data = nil, nil
		assert.Equal(t, want, got, l)
	}
}

func TestParseEntryRejects(t *testing.T) {
	for line, msg := range map[string]string{
		`{"v":1,"id":1,"type":"user"`:             "unexpected end",
		`{"v":1,"id":1,"type":"user"}}`:           "invalid character",
		`[1,2]`:                                   "not a JSON object",
		`"text"`:                                  "not a JSON object",
		`{"id":0,"type":"user"}`:                  "no id",
		`{"id":1}`:                                "no type",
		`{"id":1.5,"type":"user"}`:                "id",
		`{"id":"1","type":"user"}`:                "id",
		`{"id":1,"type":3}`:                       "not a string",
		`{"id":1,"type":"user","ts":"yesterday"}`: "ts",
	} {
		_, err := parseEntry([]byte(line))
		assert.ErrorContains(t, err, msg, line)
	}
}

func FuzzParseEntry(f *testing.F) {
	f.Add("user", `hello "world" \ } {`, 3)
	f.Add("tool_result", "\x00\n\t\u2028", 1)
	f.Fuzz(func(t *testing.T, typ, text string, id int) {
		if typ == "" || id <= 0 {
			return
		}
		e := NewEntry(typ, UserData{Text: text}, "")
		e.ID, e.V, e.TS = id, Version, time.Unix(1700000000, 5).UTC()
		line, err := encodeLine(e)
		require.NoError(t, err)
		got, err := parseEntry(line)
		require.NoError(t, err)
		var d UserData
		require.NoError(t, got.Decode(&d))
		assert.Equal(t, e.ID, got.ID)
		assert.Equal(t, e.TS, got.TS)
		want, _ := json.Marshal(text)
		var wantText string
		require.NoError(t, json.Unmarshal(want, &wantText))
		assert.Equal(t, wantText, d.Text)
		_, _ = parseEntry([]byte(text)) // arbitrary bytes never panic
	})
}
