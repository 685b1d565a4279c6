package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
)

// BenchmarkReady is the figure: from nothing to answering
// health (store opened and migrated, runtime, guard, listener), with
// computer provisioning excluded (none is started).
func BenchmarkReady(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		dir := b.TempDir()
		start := time.Now()
		d, err := New(benchOptions(dir))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Serve(ctx) }()
		resp, err := http.Get(d.BaseURL() + "/api/v1/health")
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp)
		}
		resp.Body.Close()
		total += time.Since(start)
		cancel()
		<-done
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-to-ready")
}

// BenchmarkSSELatency is the figures: how long an event takes
// from den publishing it to an SSE client on loopback reading it, with
// 1 and with 100 clients following one session.
func BenchmarkSSELatency(b *testing.B) {
	for _, clients := range []int{1, 100} {
		b.Run(fmt.Sprintf("%d-clients", clients), func(b *testing.B) {
			d := benchDaemon(b)
			rt := d.Runtime()
			ctx := context.Background()
			if err := rt.Store().EnsureAgent(ctx, "default"); err != nil {
				b.Fatal(err)
			}
			sess, err := rt.Store().CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
			if err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			sent := map[string]time.Time{}
			var lat []time.Duration
			var wg sync.WaitGroup
			ready := make(chan struct{}, clients)
			cctx, cancel := context.WithCancel(ctx)
			n := 200
			for range clients {
				wg.Go(func() {
					req, _ := http.NewRequestWithContext(cctx, "GET", d.BaseURL()+"/api/v1/sessions/"+sess.ID+"/events", nil)
					req.Header.Set("Authorization", "Bearer "+testToken)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Error(err)
						ready <- struct{}{}
						return
					}
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					ready <- struct{}{}
					got := 0
					for sc.Scan() {
						line := sc.Text()
						i := strings.Index(line, `"text":"m`)
						if !strings.HasPrefix(line, "data: ") || i < 0 {
							continue
						}
						key := line[i+8 : i+8+strings.IndexByte(line[i+8:], '"')]
						now := time.Now()
						mu.Lock()
						lat = append(lat, now.Sub(sent[key]))
						mu.Unlock()
						if got++; got == n {
							return
						}
					}
				})
			}
			for range clients {
				<-ready
			}
			time.Sleep(100 * time.Millisecond)
			b.ResetTimer()
			for i := range n {
				key := "m" + strconv.Itoa(i)
				mu.Lock()
				sent[key] = time.Now()
				mu.Unlock()
				rt.Publish(sess.ID, &agent.TextEvent{Text: key})
				time.Sleep(2 * time.Millisecond) // a model's pace, roughly
			}
			wg.Wait()
			cancel()
			b.StopTimer()
			if len(lat) != n*clients {
				b.Fatalf("%d of %d events received", len(lat), n*clients)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
		})
	}
}

func benchDaemon(b *testing.B) *Daemon {
	b.Helper()
	dir := b.TempDir()
	d, err := New(benchOptions(dir))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return d
}

// benchOptions is a daemon on loopback with the test's token and no
// computers, its data in dir.
func benchOptions(dir string) Options {
	return Options{DataDir: dir, ConfigPath: dir + "/config.toml", Config: &config.Config{}, Listen: "127.0.0.1:0",
		Log: slog.New(slog.DiscardHandler),
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("none")
		},
		Env: func(k string) string {
			if k == "DEN_TOKEN" {
				return testToken
			}
			return ""
		}}
}
