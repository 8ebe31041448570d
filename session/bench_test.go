package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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

// BenchmarkList measures listing 1,000 sessions, as written (loose refs and
// objects) and after `git gc` (packed-refs and a pack).
func BenchmarkList(b *testing.B) {
	st := benchStore(b)
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		s, err := st.Create(ctx)
		require.NoError(b, err)
		require.NoError(b, s.Append(ctx, NewEntry(TypeStart, StartData{Model: "m"}, ""), userEntry(fmt.Sprintf("task %d", i))))
	}
	list := func(b *testing.B, st *Store) {
		for i := 0; i < b.N; i++ {
			infos, err := st.List(ctx)
			if err != nil || len(infos) != 1000 {
				b.Fatal(err, len(infos))
			}
		}
	}
	b.Run("loose", func(b *testing.B) { list(b, st) })
	b.Run("packed", func(b *testing.B) {
		tb := newTestbed(b)
		tb.git(st.GitDir(), "gc", "-q", "--prune=now")
		list(b, tb.store(st.GitDir()))
	})
}
