package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchRepo makes a committed repository of files files, 100 per directory,
// each about 2 KB.
func benchRepo(b *testing.B, tb *testbed, files int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "repo")
	body := strings.Repeat("line of a source file, long enough to look real\n", 40)
	for i := range files {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			require.NoError(b, os.MkdirAll(d, 0o755))
		}
		require.NoError(b, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.go", i%100)), []byte(fmt.Sprint(i, "\n", body)), 0o644))
	}
	tb.git(dir, "init", "-q", "-b", "main")
	tb.git(dir, "config", "gc.auto", "0") // no gc left running in the background
	tb.git(dir, "add", "-A")
	tb.git(dir, "commit", "-q", "-m", "files")
	return dir
}

// touch appends a line to n files chosen by step.
func touch(b *testing.B, dir string, step, n int) {
	for k := range n {
		i := (step*7 + k*131) % 2_000
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%03d.go", i%100))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(b, err)
		fmt.Fprintf(f, "// step %d\n", step)
		require.NoError(b, f.Close())
	}
}

// BenchmarkSnapshot measures one snapshot of a 10,000-file repository with
// the private index warm: with 5 files changed since the last snapshot (the
// after-snapshot of a call that edited them), and with nothing changed (the
// before-snapshot of most steps). scan=paths is a run's usual snapshot: its
// watcher heard of the changed paths and git is asked about those alone;
// scan=full is one that scans the whole tree (a run's first, or any where
// the watcher is not available). One repository serves all.
func BenchmarkSnapshot(b *testing.B) {
	tb := newTestbed(b)
	dir := benchRepo(b, tb, 10_000)
	for _, scan := range []string{"paths", "full"} {
		for _, changed := range []int{5, 0} {
			b.Run(fmt.Sprintf("files=10000/changed=%d/scan=%s", changed, scan), func(b *testing.B) {
				_, sn := tb.snapshotter(dir)
				ctx := context.Background()
				_, err := sn.Snapshot(ctx) // seeds and warms the private index
				require.NoError(b, err)
				if scan == "full" {
					require.NoError(b, sn.Close())
				} else if sn.watch == nil {
					b.Skip("no work-tree watcher on this platform")
				}
				var cpu cpuMeter
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					touch(b, dir, i, changed)
					b.StartTimer()
					cpu.start()
					if _, err := sn.Snapshot(ctx); err != nil {
						b.Fatal(err)
					}
					cpu.stop()
				}
				cpu.report(b)
				if scan == "paths" && sn.scans.full > 1 {
					b.Fatalf("%d snapshots scanned the whole tree", sn.scans.full-1)
				}
			})
		}
	}
}

// cpuMeter adds up the CPU time (user and system) of this process and the
// git commands it waited for: unlike wall time, it does not grow with the
// load of a shared machine.
type cpuMeter struct {
	total, begin time.Duration
}

func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func (c *cpuMeter) start() { c.begin = cpuNow() }
func (c *cpuMeter) stop()  { c.total += cpuNow() - c.begin }
func (c *cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkSnapshotGrowth takes the snapshots of a 100-step session (3
// files of a 2,000-file repository changed per step) and reports what
// they add to the repository after git gc: pack bytes with the code ref
// minus without it, against the compressed size of the changed blobs alone.
func BenchmarkSnapshotGrowth(b *testing.B) {
	for i := 0; i < b.N; i++ {
		tb := newTestbed(b)
		dir := benchRepo(b, tb, 2_000)
		s, sn := tb.snapshotter(dir)
		ctx := context.Background()
		for step := range 100 {
			touch(b, dir, step, 3)
			_, err := sn.Snapshot(ctx)
			require.NoError(b, err)
		}
		with := packSize(b, tb, dir)
		blobs := tb.git(dir, "rev-list", "--objects", "--no-object-names", "--filter=object:type=blob", CodeRef(s.ID()), "--not", "HEAD")
		blobPack := tb.gitIn(dir, blobs+"\n", "pack-objects", "--stdout", "-q", "--window=10")
		tb.git(dir, "update-ref", "-d", CodeRef(s.ID()))
		without := packSize(b, tb, dir)
		b.ReportMetric(float64(with-without), "snapshot-bytes")
		b.ReportMetric(float64(len(blobPack)), "changed-blob-bytes")
		b.ReportMetric(float64(with-without)/100, "bytes/step")
	}
}

// packSize runs git gc --prune=now and returns the repository's pack size.
func packSize(b *testing.B, tb *testbed, dir string) int {
	tb.git(dir, "gc", "-q", "--prune=now")
	for _, line := range strings.Split(tb.git(dir, "count-objects", "-v"), "\n") {
		if v, ok := strings.CutPrefix(line, "size-pack: "); ok {
			kib, err := strconv.Atoi(v)
			require.NoError(b, err)
			return kib << 10
		}
	}
	b.Fatal("no size-pack in git count-objects -v")
	return 0
}
