package checkpoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/checkpoint"
)

// makeRootfs writes a tree shaped like a 1 GB Linux rootfs: 3000
// folders of 11 files each (eight of 2 KiB, two of 40 KiB, one of
// 250 KiB: 33000 files, 1.04 GB), with symlinks beside them.
func makeRootfs(b *testing.B, root string) int64 {
	b.Helper()
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, 250<<10)
	var total int64
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		b.Fatal(err)
	}
	for d := range 3000 {
		dir := filepath.Join(root, fmt.Sprintf("usr/lib/pkg%02d/dir%04d", d%50, d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f, size := range []int{2 << 10, 2 << 10, 2 << 10, 2 << 10, 2 << 10, 2 << 10, 2 << 10, 2 << 10, 40 << 10, 40 << 10, 250 << 10} {
			rng.Read(buf[:size])
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%02d", f)), buf[:size], 0o644); err != nil {
				b.Fatal(err)
			}
			total += int64(size)
		}
		if err := os.Symlink("file00", filepath.Join(dir, "link")); err != nil {
			b.Fatal(err)
		}
	}
	return total
}

// change10MB changes 10 MB as a turn might: a new 8 MB file (the last
// round's goes, so that the tree stays 1 GB), 40 files of 50 KB
// rewritten, 20 removed.
func change10MB(b *testing.B, root string, round int) {
	b.Helper()
	rng := rand.NewChaCha8([32]byte{byte(round), 2})
	buf := make([]byte, 8<<20)
	rng.Read(buf)
	os.Remove(filepath.Join(root, fmt.Sprintf("usr/bin/new%d", round-1)))
	if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("usr/bin/new%d", round)), buf, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 40 {
		d := (round*97 + i*61) % 3000
		p := filepath.Join(root, fmt.Sprintf("usr/lib/pkg%02d/dir%04d/file%02d", d%50, d, 8+i%2))
		rng.Read(buf[:50<<10])
		if err := os.WriteFile(p, buf[:50<<10], 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		d := (round*31 + i*149) % 3000
		os.Remove(filepath.Join(root, fmt.Sprintf("usr/lib/pkg%02d/dir%04d/file%02d", d%50, d, i%8)))
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckpoint1GB measures a checkpoint of a 1 GB rootfs whose
// turn changed 10 MB: the time of the take, and what it adds to the
// store's disk use (extra-MB). The first checkpoint, a full copy, is
// reported once (first-s). "daemon" keeps one Store, as den serve does
// (the last take's listings stay decoded in memory); "process" opens
// the store afresh for each take, as each den run does.
//
//	go test ./internal/checkpoint -run '^$' -bench Checkpoint1GB -benchtime 20x
func BenchmarkCheckpoint1GB(b *testing.B) {
	root := filepath.Join(b.TempDir(), "rootfs")
	size := makeRootfs(b, root)
	round := 0
	for _, fresh := range []bool{false, true} {
		name := map[bool]string{false: "daemon", true: "process"}[fresh]
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "checkpoints")
			s, err := checkpoint.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			trees := []checkpoint.Tree{{Name: "rootfs", Guest: "/", Path: root}}
			start := time.Now()
			first, err := s.Take(ctx, trees, checkpoint.TakeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("rootfs of %s in %d entries; first checkpoint: %v, %s", checkpoint.Bytes(size), first.Entries, time.Since(start), checkpoint.Bytes(first.Added))
			b.ReportMetric(time.Since(start).Seconds(), "first-s")
			var added int64
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				round++
				change10MB(b, root, round)
				// Outside the racy window, as a turn's model reply leaves it.
				time.Sleep(60 * time.Millisecond)
				if fresh {
					if s, err = checkpoint.Open(dir); err != nil {
						b.Fatal(err)
					}
				}
				before := cpuTime()
				b.StartTimer()
				c, err := s.Take(ctx, trees, checkpoint.TakeOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - before
				added += c.Added
			}
			b.ReportMetric(float64(added)/float64(b.N)/1e6, "extra-MB")
			// CPU time (user and system) is steadier than wall time on a
			// busy machine.
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkRestore1GB measures undoing a turn that changed 10 MB of a
// 1 GB rootfs: reading the tree, checking what it brings back, keeping
// the state it replaces (a checkpoint), then putting the files back.
//
//	go test ./internal/checkpoint -run '^$' -bench Restore1GB -benchtime 10x
func BenchmarkRestore1GB(b *testing.B) {
	root := filepath.Join(b.TempDir(), "rootfs")
	makeRootfs(b, root)
	s, err := checkpoint.Open(filepath.Join(b.TempDir(), "checkpoints"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	trees := []checkpoint.Tree{{Name: "rootfs", Guest: "/", Path: root}}
	if _, err := s.Take(ctx, trees, checkpoint.TakeOptions{}); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		time.Sleep(60 * time.Millisecond)
		before, err := s.Take(ctx, trees, checkpoint.TakeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		change10MB(b, root, 1000+i)
		c0 := cpuTime()
		b.StartTimer()
		res, err := s.Restore(ctx, before.ID, trees, checkpoint.RestoreOptions{Save: &checkpoint.TakeOptions{}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - c0
		if res.Undone.Added+res.Undone.Removed+res.Undone.Changed < 40 {
			b.Fatalf("undone: %+v", res.Undone)
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}
