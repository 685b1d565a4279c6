package netns_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/netns"
)

// BenchmarkAttach measures what the network costs a sandbox start:
// ns/op is Attach until slirp4netns reports the interface configured;
// ms/attach-median is the same as a median; ms/start-median is the
// whole start with the network on, from starting bwrap to the first
// output of the sandbox's command (maps written, released, at the gate,
// Attach, gate open), and ms/bwrap-median the same start without the
// network (no Attach, no gate).
//
//	go test ./internal/sandbox/netns -run '^$' -bench . -benchtime 100x
func BenchmarkAttach(b *testing.B) {
	e := newEnv(b)
	var attach, start, bare []time.Duration
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		t0 := time.Now()
		box := e.startBox(b, true, nil, e.busybox, "echo", "up")
		box.toGate(b)
		b.StartTimer()
		t1 := time.Now()
		n, err := netns.Attach(context.Background(), box.pid, netns.Options{})
		t2 := time.Now()
		b.StopTimer()
		if err != nil {
			b.Fatalf("attach: %v", err)
		}
		box.open()
		<-box.first
		attach = append(attach, t2.Sub(t1))
		start = append(start, time.Since(t0))
		if _, err := box.wait(b); err != nil {
			b.Fatalf("sandbox: %v", err)
		}
		if err := n.Close(); err != nil {
			b.Fatalf("close: %v", err)
		}

		// The same start without the network, for comparison.
		t0 = time.Now()
		box = e.startBox(b, false, nil, e.busybox, "echo", "up")
		box.release(b)
		<-box.first
		bare = append(bare, time.Since(t0))
		box.wait(b)
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(median(attach), "ms/attach-median")
	b.ReportMetric(median(start), "ms/start-median")
	b.ReportMetric(median(bare), "ms/bwrap-median")
}
