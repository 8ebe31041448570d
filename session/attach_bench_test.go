package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"decode/secrets"
)

// BenchmarkAppendImage measures recording a user entry with an attached
// image of 1 and 5 MiB (random bytes, as compressed image data is), through
// the redactor as every run writes it, then one ordinary append after it:
// the image's line gets a chunk of its own, so the next append does not
// rewrite it. Reported: the image append, and the next one.
func BenchmarkAppendImage(b *testing.B) {
	for _, size := range []int{1 << 20, 5 << 20} {
		b.Run(fmt.Sprintf("image=%dMiB", size>>20), func(b *testing.B) {
			img := make([]byte, size)
			_, _ = rand.Read(img)
			st := benchStore(b)
			st.SetRedactor(secrets.NewRedactor(), false)
			ctx := context.Background()
			var next float64
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := st.Create(ctx)
				require.NoError(b, err)
				b.StartTimer()
				att := Attachment{Path: "shot.png", Size: int64(size), SHA256: "00", MIME: "image/png", Image: img}
				require.NoError(b, s.Append(ctx, NewEntry(TypeUser, UserData{Text: "look", Attachments: []Attachment{att}}, "look")))
				b.StopTimer()
				start := nowNano()
				require.NoError(b, s.Append(ctx, benchEntry(i)))
				next += float64(nowNano() - start)
				b.StartTimer()
			}
			b.ReportMetric(next/float64(b.N)/1e6, "next-append-ms")
		})
	}
}

func nowNano() int64 { return time.Now().UnixNano() }
