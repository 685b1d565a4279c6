package session

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
)

// BenchmarkManySessions is the figure: 200 sessions at once on
// an instant fake model, 10 turns each (one message each, sent when the
// last was answered), every session with its own computer. It reports
// turns per second and events lost: those stored but not seen by a
// subscriber following every session, or missing (each turn must end
// with done and an idle status).
func BenchmarkManySessions(b *testing.B) {
	const sessions, turns = 200, 10
	for b.Loop() {
		b.StopTimer()
		tr := newBenchRuntime(b, &config.Config{Agents: map[string]config.Agent{"default": {Network: "off"}}})
		ctx := context.Background()
		if err := tr.st.EnsureAgent(ctx, "default"); err != nil {
			b.Fatal(err)
		}
		ids := make([]string, sessions)
		for i := range ids {
			s, err := tr.st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = s.ID
		}
		last, _ := tr.LastEventID(ctx)
		all := tr.Subscribe("", last, nil)
		seen := map[string]int{}
		var seenMu sync.Mutex
		stopSub := make(chan struct{})
		subDone := make(chan struct{})
		go func() {
			defer close(subDone)
			for {
				sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				e, err := all.Next(sctx)
				cancel()
				if err != nil {
					select {
					case <-stopSub:
						return
					default:
						continue
					}
				}
				seenMu.Lock()
				seen[e.Session]++
				seenMu.Unlock()
			}
		}()
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for _, id := range ids {
			wg.Go(func() {
				for i := range turns {
					sent, err := tr.Send(ctx, id, Message{Text: fmt.Sprint("turn ", i)}, TurnOptions{})
					if err != nil {
						errs <- err
						return
					}
					if out := <-sent.Done; out.Err != nil {
						errs <- out.Err
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		tr.Sync()
		time.Sleep(300 * time.Millisecond)
		close(stopSub)
		<-subDone
		all.Close()
		lost := 0
		for _, id := range ids {
			stored, err := tr.st.Events(ctx, id, 0, 100000)
			if err != nil {
				b.Fatal(err)
			}
			dones := 0
			for _, e := range stored {
				if e.Type == "done" {
					dones++
				}
			}
			lost += turns - dones
			seenMu.Lock()
			lost += len(stored) - seen[id]
			seenMu.Unlock()
		}
		b.ReportMetric(float64(sessions*turns)/elapsed.Seconds(), "turns/s")
		b.ReportMetric(float64(lost), "events-lost")
		tr.Close()
		b.StartTimer()
	}
}

// newBenchRuntime is newTestRuntime for a benchmark: a fake model that
// answers every request at once with a short text.
func newBenchRuntime(b *testing.B, cfg *config.Config) *testRuntime {
	b.Helper()
	return newTestRuntimeTB(b, cfg, llmtest.Turn{Text: "ok", InputTokens: 10, OutputTokens: 2})
}
