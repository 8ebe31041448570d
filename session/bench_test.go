package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchStore is a bare store of its own; benchmarks need no git binary.
func benchStore(b *testing.B) *Store {
	b.Helper()
	dir := b.TempDir()
	env := Env{Getenv: func(k string) string {
		if k == "DECODE_STORE" {
			return filepath.Join(dir, "store")
		}
		return ""
	}, Home: dir}
	st, err := OpenStore(dir, env)
	require.NoError(b, err)
	return st
}

// benchEntry is a tool result of a typical size (~600 bytes encoded).
func benchEntry(i int) Entry {
	return NewEntry(TypeToolResult, map[string]string{
		"call_id": fmt.Sprintf("call_%d", i),
		"content": strings.Repeat("some tool output ", 30),
	}, "read main.go")
}

// benchSession returns a session holding n entries, written 100 per commit.
func benchSession(b *testing.B, st *Store, n int) *Session {
	b.Helper()
	s, err := st.Create(context.Background())
	require.NoError(b, err)
	for done := 0; done < n; {
		batch := make([]Entry, 0, 100)
		for ; done < n && len(batch) < 100; done++ {
			batch = append(batch, benchEntry(done))
		}
		require.NoError(b, s.Append(context.Background(), batch...))
	}
	return s
}

// BenchmarkAppend measures one single-entry append (one commit) on a session
// that already holds 10 or 10,000 entries; the two should cost about the same.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			st := benchStore(b)
			s := benchSession(b, st, n)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Append(ctx, benchEntry(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen measures loading a 10,000-entry session.
func BenchmarkOpen(b *testing.B) {
	st := benchStore(b)
	s := benchSession(b, st, 10_000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := st.Open(ctx, s.ID())
		if err != nil || len(got.Entries()) != 10_000 {
			b.Fatal(err, len(got.Entries()))
		}
	}
}

// BenchmarkList measures listing 1,000 and 10,000 sessions, as written
// (loose refs and objects) and after `git gc` (packed-refs and a pack).
// `decode log` is this plus printing.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10_000} {
		st := benchStore(b)
		manySessions(b, st, n)
		list := func(b *testing.B, st *Store) {
			for i := 0; i < b.N; i++ {
				infos, err := st.List(ctx)
				if err != nil || len(infos) != n {
					b.Fatal(err, len(infos))
				}
			}
		}
		b.Run(fmt.Sprintf("sessions=%d/loose", n), func(b *testing.B) { list(b, st) })
		b.Run(fmt.Sprintf("sessions=%d/packed", n), func(b *testing.B) {
			tb := newTestbed(b)
			tb.git(st.GitDir(), "gc", "-q", "--prune=now")
			list(b, tb.store(st.GitDir()))
		})
	}
}

// manySessions writes n two-entry sessions the quick way: the objects as
// Append writes them, the refs as plain files without the fsync that
// dominates an append, so that setting up 10,000 sessions takes seconds.
func manySessions(b testing.TB, st *Store, n int) {
	b.Helper()
	st.SetClock(fakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Minute))
	for i := 0; i < n; i++ {
		s, err := st.Create(ctx)
		require.NoError(b, err)
		added, lines, err := s.prepare([]Entry{
			NewEntry(TypeStart, StartData{Model: "gemini-2.5-flash", Command: "run"}, ""),
			userEntry(fmt.Sprintf("task number %d: fix the failing test", i)),
		}, st.clock())
		require.NoError(b, err)
		chunks, _, _, err := s.writeChunks(lines)
		require.NoError(b, err)
		var m meta
		for _, e := range added {
			m.observe(e)
		}
		h, err := st.writeCommit(nil, nil, chunks, nil, subject(added)+"\n\n"+m.trailers(), st.clock())
		require.NoError(b, err)
		p := st.refs.path(refPrefix + s.ID())
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(h.String()+"\n"), 0o644))
	}
}
