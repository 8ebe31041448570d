package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"decode/secrets"
)

var ctx = context.Background()

func TestAppendWritesOneCommitPerCall(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetClock(fakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Second))
	s, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = tb.gitErr(dir, "", "rev-parse", "--verify", "-q", sessionRef(s.ID()))
	assert.Error(t, err, "a created session has no ref before its first append")

	require.NoError(t, s.Append(ctx, NewEntry(TypeStart, StartData{Model: "gemini-2.5-flash", Command: "run"}, "")))
	require.NoError(t, s.Append(ctx, userEntry("fix the failing test\nin ./session please")))
	require.NoError(t, s.Append(ctx,
		NewEntry(TypeToolCall, ToolCallData{CallID: "c1", Name: "edit", Decision: "allow"}, "edit main.go"),
		NewEntry(TypeToolResult, map[string]string{"content": "ok"}, "edit main.go")))
	require.NoError(t, s.Append(ctx, NewEntry(TypeToolResult, map[string]string{"content": "done"}, "edit main.go")))

	log := tb.git(dir, "log", "--format=%s", sessionRef(s.ID()))
	assert.Equal(t, []string{"tool_result edit main.go", "tool_call edit main.go; tool_result edit main.go", "user", "start"}, strings.Split(log, "\n"))
	body := tb.git(dir, "log", "-1", "--format=%b", sessionRef(s.ID()))
	assert.Equal(t, "Decode-Entries: 5\nDecode-Model: gemini-2.5-flash\nDecode-Title: fix the failing test in ./session please\nDecode-Status: running\nDecode-Turns: 1", body)
	assert.Equal(t, "decode <decode@localhost>", tb.git(dir, "log", "-1", "--format=%an <%ae>", sessionRef(s.ID())))

	es := s.Entries()
	require.Len(t, es, 5)
	for i, e := range es {
		assert.Equal(t, Version, e.V)
		assert.Equal(t, i+1, e.ID, "ids count from 1")
		assert.Equal(t, i, e.Parent, "parent is the previous entry")
		assert.Equal(t, time.UTC, e.TS.Location())
	}
	assert.Equal(t, "edit main.go", es[4].Note)

	shown := tb.git(dir, "show", sessionRef(s.ID())+":session/000000.jsonl") + "\n"
	jsonl, err := s.JSONL(ctx)
	require.NoError(t, err)
	assert.Equal(t, shown, string(jsonl))
	lines := strings.Split(strings.TrimSuffix(shown, "\n"), "\n")
	require.Len(t, lines, 5)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &first))
	assert.Equal(t, "user", first["type"])
	assert.EqualValues(t, 2, first["id"])
	assert.EqualValues(t, 1, first["parent"])
	assert.Equal(t, "2026-01-02T03:04:07Z", first["ts"])

	re, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	again, err := re.JSONL(ctx)
	require.NoError(t, err)
	assert.Equal(t, jsonl, again, "a reopened session reads the same bytes")
	assert.Equal(t, stripNotes(es), re.Entries())
	assert.Empty(t, re.Problems())
}

func stripNotes(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		e.Note = ""
		out[i] = e
	}
	return out
}

func TestChunkRolloverRewritesOnlyTheLastChunk(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	text := strings.Repeat("x", 1000)
	var want bytes.Buffer
	for i := 0; i < 140; i++ { // ~140 KiB: three chunks
		require.NoError(t, s.Append(ctx, userEntry(text)))
	}
	ref := sessionRef(s.ID())
	before := lsTree(tb, dir, ref+"~1")
	after := lsTree(tb, dir, ref)
	require.Len(t, after, 3, "140 KiB of lines make three chunks")
	require.Len(t, before, 3)
	assert.Equal(t, before[:2], after[:2], "an append keeps the hashes of the full chunks")
	assert.NotEqual(t, before[2], after[2], "an append rewrites the last chunk")

	for _, name := range []string{"000000.jsonl", "000001.jsonl", "000002.jsonl"} {
		chunk := tb.git(dir, "show", ref+":session/"+name) + "\n"
		assert.LessOrEqual(t, len(chunk), maxChunk, "%s stays within 64 KiB", name)
		want.WriteString(chunk)
	}
	jsonl, err := s.JSONL(ctx)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(jsonl), "chunks concatenated in name order are the JSONL")
	assert.Equal(t, 140, strings.Count(string(jsonl), "\n"))

	// A line larger than a chunk gets a chunk of its own, and the next line a new one.
	require.NoError(t, s.Append(ctx, userEntry(strings.Repeat("y", 70<<10))))
	require.NoError(t, s.Append(ctx, userEntry("small")))
	names := lsTree(tb, dir, ref)
	require.Len(t, names, 5)
	big := tb.git(dir, "show", ref+":session/000003.jsonl")
	assert.Equal(t, 1, strings.Count(big+"\n", "\n"), "the big line is alone in its chunk")
	assert.Contains(t, tb.git(dir, "show", ref+":session/000004.jsonl"), `"small"`)

	re, err := st.Open(ctx, s.ID())
	require.NoError(t, err)
	assert.Len(t, re.Entries(), 142)
	archived := tb.git(dir, "archive", "--format=tar", ref, "session")
	assert.NotEmpty(t, archived)
}

// lsTree lists "hash name" of the chunk files at rev.
func lsTree(tb *testbed, dir, rev string) []string {
	out := tb.git(dir, "ls-tree", rev+":session")
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		rows = append(rows, f[2]+" "+f[3])
	}
	return rows
}

func TestRepositoryIsNotTouched(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dirty.txt"), []byte("untracked\n"), 0o644))
	status := tb.git(dir, "status", "--porcelain")
	head := tb.git(dir, "rev-parse", "HEAD")
	branches := tb.git(dir, "for-each-ref", "refs/heads", "refs/tags")
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	require.NoError(t, err)

	st := tb.store(dir)
	for i := 0; i < 3; i++ {
		s, err := st.Create(ctx)
		require.NoError(t, err)
		appendN(t, s, 3, fmt.Sprintf("task %d", i))
		_, err = st.forkAt(ctx, s.ID(), 2)
		require.NoError(t, err)
	}

	assert.Equal(t, status, tb.git(dir, "status", "--porcelain"))
	assert.Equal(t, head, tb.git(dir, "rev-parse", "HEAD"))
	assert.Equal(t, branches, tb.git(dir, "for-each-ref", "refs/heads", "refs/tags"))
	after, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	require.NoError(t, err)
	assert.Equal(t, index, after, "the index is unchanged")
	assert.Equal(t, "ref: refs/heads/main", strings.TrimSpace(readFile(t, filepath.Join(dir, ".git", "HEAD"))))
	out, err := tb.gitErr(dir, "", "fsck", "--strict", "--no-dangling")
	assert.NoError(t, err, "git fsck --strict: %s", out)
	assert.Empty(t, out)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestSessionsSurviveGC(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	want := map[string][]byte{}
	for i := 0; i < 4; i++ {
		s, err := st.Create(ctx)
		require.NoError(t, err)
		appendN(t, s, 5, fmt.Sprintf("session %d", i))
		want[s.ID()], err = s.JSONL(ctx)
		require.NoError(t, err)
	}
	tb.git(dir, "gc", "-q", "--prune=now")
	loose, err := filepath.Glob(filepath.Join(dir, ".git", "refs", "decode", "sessions", "*"))
	require.NoError(t, err)
	assert.Empty(t, loose, "git gc packed the session refs")
	assert.True(t, strings.HasPrefix(tb.git(dir, "count-objects"), "0 objects"), "git gc packed every object")

	for _, fresh := range []bool{false, true} {
		st := st
		if fresh {
			st = tb.store(dir)
		}
		infos, err := st.List(ctx)
		require.NoError(t, err)
		assert.Len(t, infos, 4)
		for id, data := range want {
			s, err := st.Open(ctx, id)
			require.NoError(t, err, "fresh store %v", fresh)
			got, err := s.JSONL(ctx)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			require.NoError(t, s.Append(ctx, userEntry("after gc")))
			want[id], err = s.JSONL(ctx)
			require.NoError(t, err)
		}
	}
	out, err := tb.gitErr(dir, "", "fsck", "--strict", "--no-dangling")
	assert.NoError(t, err, out)
	tb.git(dir, "gc", "-q", "--prune=now")
	for id, data := range want {
		got := tb.git(dir, "show", sessionRef(id)+":session/000000.jsonl") + "\n"
		assert.Equal(t, string(data), got)
	}
}

func TestCompareAndSwap(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 2, "hello")
	ref := sessionRef(s.ID())

	t.Run("stale session", func(t *testing.T) {
		other, err := st.Open(ctx, s.ID())
		require.NoError(t, err)
		require.NoError(t, other.Append(ctx, userEntry("from the other")))
		err = s.Append(ctx, userEntry("from the stale one"))
		assert.ErrorIs(t, err, ErrConflict)
		assert.Len(t, s.Entries(), 2, "a failed append leaves the session as it was")
		re, err := st.Open(ctx, s.ID())
		require.NoError(t, err)
		assert.Len(t, re.Entries(), 3, "nothing of the winner is lost")
		s = re
	})

	t.Run("git update-ref", func(t *testing.T) {
		tip := tb.git(dir, "rev-parse", ref)
		tb.git(dir, "update-ref", ref, tip+"~1", tip)
		err := s.Append(ctx, userEntry("lost?"))
		assert.ErrorIs(t, err, ErrConflict)
		assert.Equal(t, tb.git(dir, "rev-parse", tip+"~1"), tb.git(dir, "rev-parse", ref), "the ref stays where git put it")
		tb.git(dir, "update-ref", ref, tip)
		require.NoError(t, s.Append(ctx, userEntry("now it fits")))
	})

	t.Run("a held .lock", func(t *testing.T) {
		lock := filepath.Join(dir, ".git", filepath.FromSlash(ref)+".lock")
		require.NoError(t, os.WriteFile(lock, nil, 0o644))
		err := s.Append(ctx, userEntry("blocked"))
		assert.ErrorIs(t, err, ErrConflict)
		require.NoError(t, os.Remove(lock))
		require.NoError(t, s.Append(ctx, userEntry("unblocked")))
	})

	t.Run("create over an existing ref", func(t *testing.T) {
		err := st.refs.update(ref, [20]byte{}, s.tip)
		assert.ErrorIs(t, err, ErrConflict, "creating a ref that exists fails")
	})

	t.Run("packed ref", func(t *testing.T) {
		tb.git(dir, "pack-refs", "--all")
		_, err := os.Stat(filepath.Join(dir, ".git", filepath.FromSlash(ref)))
		require.ErrorIs(t, err, os.ErrNotExist)
		require.NoError(t, s.Append(ctx, userEntry("on a packed ref")))
		stale, err := st.Open(ctx, s.ID())
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, userEntry("again")))
		assert.ErrorIs(t, stale.Append(ctx, userEntry("stale")), ErrConflict)
	})

	out := tb.git(dir, "log", "--format=%s", ref)
	assert.Equal(t, 7, len(strings.Split(out, "\n")))
}

func TestOutsideARepository(t *testing.T) {
	tb := newTestbed(t)
	work := t.TempDir()
	tb.vars["GIT_CEILING_DIRECTORIES"] = filepath.Dir(work)

	st := tb.store(work)
	assert.Equal(t, filepath.Join(tb.home, ".state", "decode"), st.GitDir(), "XDG_STATE_HOME/decode")
	s, err := st.Create(ctx)
	require.NoError(t, err)
	appendN(t, s, 2, "outside")
	assert.Equal(t, "true", tb.git(st.GitDir(), "rev-parse", "--is-bare-repository"))
	out, err := tb.gitErr(st.GitDir(), "", "fsck", "--strict", "--no-dangling")
	assert.NoError(t, err, out)
	assert.Contains(t, tb.git(st.GitDir(), "show", sessionRef(s.ID())+":session/000000.jsonl"), "outside")

	custom := filepath.Join(t.TempDir(), "custom")
	tb.vars["DECODE_STORE"] = custom
	st2 := tb.store(work)
	assert.Equal(t, custom, st2.GitDir(), "DECODE_STORE wins")
	infos, err := st2.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)

	delete(tb.vars, "DECODE_STORE")
	delete(tb.vars, "XDG_STATE_HOME")
	st3 := tb.store(work)
	assert.Equal(t, filepath.Join(tb.home, ".local", "state", "decode"), st3.GitDir(), "HOME/.local/state/decode")
}

func TestUnknownEntriesKeptByteExact(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	raw := `{"v":1,"id":1,"ts":"2026-01-01T00:00:00Z","type":"user","data":{"text":"hi"},"future_field":[1, 2]}` + "\n" +
		`{"v":1,"id":2,"parent":1,"ts":"2026-01-01T00:00:01Z","type":"hologram","data":{"x": "y"}}` + "\n"
	id := writeRawSession(tb, dir, "0000000raw", map[string]string{"000000.jsonl": raw})

	st := tb.store(dir)
	s, err := st.Open(ctx, id)
	require.NoError(t, err)
	require.Len(t, s.Entries(), 2)
	assert.Equal(t, "hologram", s.Entries()[1].Type)
	assert.Empty(t, s.Problems())
	appendN(t, s, 3, "more")
	es := s.Entries()
	assert.Equal(t, 5, es[4].ID)
	assert.Equal(t, 2, es[2].Parent, "the first new entry follows the unknown one")
	jsonl, err := s.JSONL(ctx)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(jsonl), raw), "old lines are never re-encoded")
}

// writeRawSession stores chunks as a session with plain git commands.
func writeRawSession(tb *testbed, dir, id string, chunks map[string]string) string {
	tb.t.Helper()
	var tree strings.Builder
	for name, data := range chunks {
		h := tb.gitIn(dir, data, "hash-object", "-w", "--stdin")
		fmt.Fprintf(&tree, "100644 blob %s\t%s\n", h, name)
	}
	sub := tb.gitIn(dir, tree.String(), "mktree")
	root := tb.gitIn(dir, "040000 tree "+sub+"\tsession\n", "mktree")
	c := tb.git(dir, "commit-tree", root, "-m", "raw")
	tb.git(dir, "update-ref", sessionRef(id), c)
	return id
}

func TestCorruptLinesAreReportedAndSkipped(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	good := func(id int) string {
		return fmt.Sprintf(`{"v":1,"id":%d,"ts":"2026-01-01T00:00:00Z","type":"user","data":{"text":"t%d"}}`, id, id) + "\n"
	}
	id := writeRawSession(tb, dir, "0000000bad", map[string]string{
		"000000.jsonl": good(1) + "{not json\n" + good(2) + `{"v":1,"type":"user"}` + "\n",
		"000001.jsonl": good(3) + `{"v":1,"id":4,"ty`,
	})
	st := tb.store(dir)
	s, err := st.Open(ctx, id)
	require.NoError(t, err)
	ids := []int{}
	for _, e := range s.Entries() {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []int{1, 2, 3}, ids, "the good lines load")
	ps := s.Problems()
	require.Len(t, ps, 3)
	assert.Equal(t, "session/000000.jsonl", ps[0].Chunk)
	assert.Equal(t, 2, ps[0].Line)
	assert.Equal(t, 4, ps[1].Line)
	assert.Contains(t, ps[1].Err, "no id")
	assert.Equal(t, "session/000001.jsonl", ps[2].Chunk)
	assert.Equal(t, 2, ps[2].Line)
	assert.Contains(t, ps[2].Err, "truncated")

	require.NoError(t, s.Append(ctx, userEntry("after the damage")))
	re, err := st.Open(ctx, id)
	require.NoError(t, err)
	assert.Len(t, re.Entries(), 4, "a new line after a truncated one reads back")
	assert.Len(t, re.Problems(), 3)
	assert.Equal(t, 4, re.Entries()[3].ID)
}

func TestRedaction(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetRedactor(secrets.NewRedactor("hunter2-very-secret", "short"), false)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	key := "sk-proj-" + strings.Repeat("Ab3", 10)
	ant := "sk-ant-api03-" + strings.Repeat("Zz9_", 8)
	text := "keys: " + key + "\n" + ant + " and AKIAABCDEFGHIJKLMNOP, password hunter2-very-secret; task-list-item-abcdefghijklmnopqrstu; short"
	require.NoError(t, s.Append(ctx, userEntry(text)))
	require.NoError(t, s.Append(ctx, NewEntry(TypeToolCall, ToolCallData{Name: "bash"}, "bash curl -H 'key: "+key+"'")))

	stored := tb.git(dir, "show", sessionRef(s.ID())+":session/000000.jsonl")
	stored += tb.git(dir, "log", "--format=%B", sessionRef(s.ID()))
	assert.Contains(t, stored, "tool_call bash curl -H 'key: [REDACTED]'", "commit subjects are redacted too")
	for _, secret := range []string{key, ant, "AKIAABCDEFGHIJKLMNOP", "hunter2-very-secret"} {
		assert.NotContains(t, stored, secret)
	}
	assert.Contains(t, stored, "task-list-item-abcdefghijklmnopqrstu", "words that merely contain sk- stay")
	assert.Contains(t, stored, "; short", "values under 8 bytes are not redacted")
	var d UserData
	require.NoError(t, s.Entries()[0].Decode(&d))
	assert.Equal(t, "keys: [REDACTED]\n[REDACTED] and [REDACTED], password [REDACTED]; task-list-item-abcdefghijklmnopqrstu; short", d.Text,
		"the entry in memory matches what was stored")
}

func TestRedactionKeepsLinesValid(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetRedactor(nil, false)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\\"
	require.NoError(t, s.Append(ctx, userEntry(pem+`"quoted" and more`)), "a mask that would end inside an escape")
	stored := tb.git(dir, "show", sessionRef(s.ID())+":session/000000.jsonl")
	assert.NotContains(t, stored, "MIIEowIBAAKCAQEA1234567890abcdef")
}

func TestModelSeesShapes(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetRedactor(secrets.NewRedactor("known-secret-value"), true)
	s, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, userEntry("AKIAABCDEFGHIJKLMNOP known-secret-value")))
	stored := tb.git(dir, "show", sessionRef(s.ID())+":session/000000.jsonl")
	assert.NotContains(t, stored, "AKIAABCDEFGHIJKLMNOP", "stored in full redaction")
	var d UserData
	require.NoError(t, s.Entries()[0].Decode(&d))
	assert.Equal(t, "AKIAABCDEFGHIJKLMNOP [REDACTED]", d.Text, "in memory, for the model: the shape stays, the known value does not")
}

func TestListReadsTrailers(t *testing.T) {
	tb := newTestbed(t)
	dir := tb.repo()
	st := tb.store(dir)
	st.SetClock(fakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Minute))
	a, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Append(ctx,
		NewEntry(TypeStart, StartData{Model: "openai:gpt-4.1-mini"}, ""),
		userEntry("first question"),
		NewEntry(TypeEnd, EndData{Status: "done"}, "")))
	b, err := st.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Append(ctx, userEntry(strings.Repeat("long title ", 20)), userEntry("second"),
		NewEntry(TypeApprovalReq, map[string]string{"tool": "bash"}, "")))

	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	assert.Equal(t, b.ID(), infos[0].ID, "newest first")
	assert.Equal(t, Status("paused"), infos[0].Status)
	assert.Equal(t, 2, infos[0].Turns)
	assert.Equal(t, 3, infos[0].Entries)
	assert.LessOrEqual(t, len([]rune(infos[0].Title)), 72)
	assert.True(t, strings.HasPrefix(infos[0].Title, "long title long title"))
	assert.Equal(t, Info{
		ID:      a.ID(),
		Created: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Updated: time.Date(2026, 3, 1, 0, 1, 0, 0, time.UTC),
		Model:   "openai:gpt-4.1-mini",
		Title:   "first question",
		Status:  "done",
		Entries: 3,
		Turns:   1,
	}, infos[1])
}
