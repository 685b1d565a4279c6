package schedule

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// The figures: a due job starts within a second of its time;
// 1,000 jobs cost the idle scheduler at most a megabyte and no busy
// CPU; a catch-up after 24 hours of downtime with 100 jobs accounts for
// every missed time within a second. Run with
//
//	go test -run XXX -bench . -benchtime 5x ./internal/schedule

func benchStore(b *testing.B) *store.Store {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "den.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkDueStart: on the wall clock, how late the runner is asked to
// run a job after its due time (ms-late: the mean; ms-late-max).
func BenchmarkDueStart(b *testing.B) {
	st := benchStore(b)
	started := make(chan time.Time, 1)
	run := &fakeRunner{}
	run.turn = func(j store.Schedule, prompt string) Turn {
		started <- time.Now()
		return Turn{Ended: true}
	}
	e := New(Options{Store: st, Runner: run, Lock: filepath.Join(b.TempDir(), "schedule.lock")})
	book := &Book{Store: st, Wake: e.Wake}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	var total, worst time.Duration
	n := 0
	for b.Loop() {
		due := time.Now().Add(300 * time.Millisecond)
		_, err := book.Add(ctx, "default", "user", Params{When: Spec{At: due.Format(time.RFC3339Nano), TZ: "UTC"}, Prompt: ptr("x"),
			Deliver: ptr(DeliverNone)})
		if err != nil {
			b.Fatal(err)
		}
		late := (<-started).Sub(due)
		total += late
		worst = max(worst, late)
		n++
	}
	cancel()
	<-done
	b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms-late")
	b.ReportMetric(float64(worst.Microseconds())/1000, "ms-late-max")
}

// BenchmarkIdle1000: what 1,000 jobs (cron, intervals, one-shots, all
// due within days, none now) cost a scheduler that sleeps: the heap and
// the resident memory (SQLite's cache included) of a fresh process
// (TestIdleProcess) with none and with them, and the CPU of a second of
// sleep.
func BenchmarkIdle1000(b *testing.B) {
	for b.Loop() {
		var got [2][3]float64
		for i, n := range []int{0, 1000} {
			path := filepath.Join(b.TempDir(), "den.db")
			st, err := store.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			book := &Book{Store: st}
			for i := range n {
				var when Spec
				switch i % 4 {
				case 0:
					when = Spec{Cron: fmt.Sprintf("%d %d * * *", i%60, i%24), TZ: "Europe/Berlin"}
				case 1:
					when = Spec{Every: fmt.Sprintf("%dh", 1+i%48)}
				case 2:
					when = Spec{In: fmt.Sprintf("%dh", 1+i%100)}
				default:
					when = Spec{Cron: "0 9 * * mon-fri", TZ: "America/New_York"}
				}
				if _, err := book.Add(context.Background(), "default", "user", Params{When: when, Prompt: ptr(strings.Repeat("p", 500))}); err != nil {
					b.Fatal(err)
				}
			}
			st.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestIdleProcess$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), "DEN_SCHEDULE_IDLE_STORE="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			if _, err := fmt.Sscanf(string(out[strings.Index(string(out), "idle:"):]), "idle: %f %f %f", &got[i][0], &got[i][1], &got[i][2]); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		b.ReportMetric(got[0][0]/1024, "KiB-heap-0jobs")
		b.ReportMetric(got[1][0]/1024, "KiB-heap-1000jobs")
		b.ReportMetric(got[0][1]/1024, "KiB-rss-0jobs")
		b.ReportMetric(got[1][1]/1024, "KiB-rss-1000jobs")
		b.ReportMetric(got[1][2], "cpu-ms/s-idle")
	}
}

// TestIdleProcess is BenchmarkIdle1000's process: a scheduler on the
// store it is given, measured once it sleeps. Run alone, it does
// nothing.
func TestIdleProcess(t *testing.T) {
	path := os.Getenv("DEN_SCHEDULE_IDLE_STORE")
	if path == "" {
		return
	}
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := New(Options{Store: st, Runner: &fakeRunner{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	time.Sleep(time.Second)
	heap, rss := memory()
	cpu0 := cpuTime()
	time.Sleep(time.Second)
	cpu := cpuTime() - cpu0
	cancel()
	<-done
	fmt.Printf("idle: %d %d %f\n", heap, rss, float64(cpu.Microseconds())/1000)
}

// memory is the Go heap in use after a collection, and the resident
// set (SQLite's cache included), in bytes.
func memory() (heap, rss int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b, _ := os.ReadFile("/proc/self/statm")
	f := strings.Fields(string(b))
	if len(f) > 1 {
		pages, _ := strconv.ParseInt(f[1], 10, 64)
		rss = pages * int64(os.Getpagesize())
	}
	return int64(m.HeapInuse), rss
}

// cpuTime is the CPU the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCatchUp24h: den starts after 24 hours down with 100 jobs;
// the time until every missed slot has its row and each job's catch-up
// run (run-once) has run. every15m: 9,600 slots; every1m: 144,000.
func BenchmarkCatchUp24h(b *testing.B) {
	for _, every := range []string{"15m", "1m"} {
		b.Run("every"+every, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
				st := benchStore(b)
				clock := newClock(t0)
				book := &Book{Store: st, Clock: clock}
				for i := range 100 {
					if _, err := book.Add(context.Background(), "default", "user", Params{When: Spec{Every: every},
						Prompt: ptr(fmt.Sprint("job ", i)), Deliver: ptr(DeliverNone)}); err != nil {
						b.Fatal(err)
					}
				}
				clock.Set(t0.Add(24 * time.Hour))
				run := &fakeRunner{}
				e := New(Options{Store: st, Runner: run, Clock: clock, MaxRunning: 100})
				e.started = clock.Now()
				b.StartTimer()
				if err := e.recover(context.Background()); err != nil {
					b.Fatal(err)
				}
				e.tick(context.Background())
				e.wg.Wait()
				b.StopTimer()
				runs, err := st.ScheduleRuns(context.Background(), store.RunQuery{Limit: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				d, _ := ParseDuration(every)
				if want := 100 * int(24*time.Hour/d); len(runs) != want || len(run.Turns()) != 100 {
					b.Fatalf("%d rows, %d runs; want %d and 100", len(runs), len(run.Turns()), want)
				}
				b.StartTimer()
			}
		})
	}
}
