package bwrap_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// The benchmarks below measure the figures den promises for the bwrap
// backend on the busybox rootfs: how long a computer takes to start,
// how long a command takes through the persistent shell and as a fresh
// process, how 50 busy sessions share the host, and what an idle
// session costs in memory. Besides ns/op they report medians and 99th
// percentiles, which a few slow outliers cannot move the way they move
// a mean.
//
//	go test ./internal/sandbox/bwrap/ -run '^$' -bench . -benchtime=300x
//
// Sessions keep their control folders (a file per command, FIFOs and a
// folder per Exec) under $TMPDIR, as den keeps them under its data dir:
// on a disk file system every command pays for creating and removing
// those files. TMPDIR=/dev/shm shows the figures without the disk.

// sessionOptions describes a session on the busybox rootfs whose folders
// live under dir. Unlike sandboxtest.Start it registers no cleanup, so a
// benchmark can start and close sessions in its loop.
func sessionOptions(b *testing.B, backend sandbox.Backend, dir string, network bool) sandbox.SessionOptions {
	b.Helper()
	ws, off := filepath.Join(dir, "workspace"), filepath.Join(dir, "offloads")
	for _, d := range []string{ws, off} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	sandboxtest.Own(b, ws, off)
	return sandbox.SessionOptions{
		Backend: backend,
		Spec: sandbox.Spec{
			Rootfs:  sandboxtest.Rootfs(b),
			IDs:     sandboxtest.IDs(b),
			Network: network,
			Binds: []sandbox.Bind{
				{Host: ws, Guest: sandbox.GuestWorkspace},
				{Host: off, Guest: sandbox.GuestOffloads},
			},
		},
		OffloadDir: off,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/root", "LANG=C.UTF-8", "PWD=/workspace"},
		Timeout:    30 * time.Second,
	}
}

// reportQuantiles reports the median and the 99th percentile of ds, in
// milliseconds, as "ms/NAME-median" and "ms/NAME-p99".
func reportQuantiles(b *testing.B, name string, ds []time.Duration) {
	b.Helper()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(quantile(ds, 0.5)), "ms/"+name+"-median")
	b.ReportMetric(ms(quantile(ds, 0.99)), "ms/"+name+"-p99")
}

// quantile returns the q-quantile of sorted ds by nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// BenchmarkSessionStart starts a computer (through the supervisor's
// ready line) and closes it. ms/start-median is the figure to compare
// with the target; ns/op includes Close. The cgroup case is the path den
// takes when the host offers control groups: a group per session, made
// before the start (ms/cgroup-create), joined by the sandbox while bwrap
// waits (part of ms/start), and removed after Close (ms/close).
func BenchmarkSessionStart(b *testing.B) {
	backend := newBackend(b)
	proxy := egress.New(egress.Options{})
	cases := []struct {
		name    string
		network bool
		cgroup  bool
	}{
		{"network=off", false, false},
		{"network=on", true, false},
		{"network=off/cgroup", false, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			opts := sessionOptions(b, backend, dir, tc.network)
			var groups *cgroup.Manager
			if tc.cgroup {
				m, err := cgroup.New("den-bench-" + strconv.Itoa(os.Getpid()))
				if err != nil {
					b.Skipf("no control groups: %v", err)
				}
				b.Cleanup(func() { m.RemoveAll() })
				groups = m
			}
			ctx := context.Background()
			var creates, starts, closes []time.Duration
			i := 0
			for b.Loop() {
				i++
				opts.ControlDir = filepath.Join(dir, "control"+strconv.Itoa(i))
				var g *cgroup.Group
				if groups != nil {
					t0 := time.Now()
					var err error
					if g, err = groups.Create("s"+strconv.Itoa(i), cgroup.Limits{Pids: 4096}); err != nil {
						b.Fatal(err)
					}
					creates = append(creates, time.Since(t0))
					opts.Spec.Cgroup = g
				}
				if tc.network {
					// A computer's network is served once per start.
					opts.Spec.Egress = proxy.Net(egress.Scope{Agent: "bench"})
				}
				t0 := time.Now()
				s, err := sandbox.Start(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				s.Close()
				if g != nil {
					g.Remove()
				}
				starts = append(starts, t1.Sub(t0))
				closes = append(closes, time.Since(t1))
			}
			reportQuantiles(b, "start", starts)
			reportQuantiles(b, "close", closes)
			reportQuantiles(b, "cgroup-create", creates)
		})
	}
}

// BenchmarkRoundTrip runs a command through a warm persistent shell
// (Session.Run): the shell's builtin true, and /bin/true, which the
// shell forks and execs.
func BenchmarkRoundTrip(b *testing.B) {
	backend := newBackend(b)
	for _, script := range []string{"true", "/bin/true"} {
		b.Run(strings.ReplaceAll(script, "/", "_"), func(b *testing.B) {
			e := sandboxtest.Start(b, backend)
			benchCommand(b, func(ctx context.Context, c sandbox.Command) (*sandbox.Result, error) {
				return e.Session.Run(ctx, c)
			}, script)
		})
	}
}

// BenchmarkExec runs a command as a fresh process (Session.Exec): the
// supervisor forks a shell that runs the command's script.
func BenchmarkExec(b *testing.B) {
	backend := newBackend(b)
	for _, script := range []string{"true", "/bin/true"} {
		b.Run(strings.ReplaceAll(script, "/", "_"), func(b *testing.B) {
			e := sandboxtest.Start(b, backend)
			benchCommand(b, e.Session.Exec, script)
		})
	}
}

func benchCommand(b *testing.B, run func(context.Context, sandbox.Command) (*sandbox.Result, error), script string) {
	b.Helper()
	ctx := context.Background()
	c := sandbox.Command{Script: script}
	// Warm up: the persistent shell starts on the first Run.
	for range 3 {
		if r, err := run(ctx, c); err != nil || r.ExitCode != 0 {
			b.Fatalf("warm-up: %v %+v", err, r)
		}
	}
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := run(ctx, c)
		ds = append(ds, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if r.ExitCode != 0 {
			b.Fatalf("%q: exit %d: %s", script, r.ExitCode, r.Output)
		}
	}
	reportQuantiles(b, "cmd", ds)
}

// BenchmarkConcurrentSessions runs b.N commands in all across 50
// sessions, each session's persistent shell driven by its own
// goroutine, and reports the throughput and the per-command latency.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions = 50
	backend := newBackend(b)
	envs := make([]*sandboxtest.Env, sessions)
	for i := range envs {
		envs[i] = sandboxtest.Start(b, backend)
		envs[i].Run(b, "true") // start the persistent shell
	}
	ctx := context.Background()
	c := sandbox.Command{Script: "echo x"}
	lat := make([][]time.Duration, sessions)
	var next atomic.Int64
	var failed atomic.Pointer[string]
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, e := range envs {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				r, err := e.Session.Run(ctx, c)
				lat[i] = append(lat[i], time.Since(t0))
				if err != nil || r.Output != "x\n" {
					msg := fmt.Sprintf("session %d: %v %+v", i, err, r)
					failed.CompareAndSwap(nil, &msg)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if msg := failed.Load(); msg != nil {
		b.Fatal(*msg)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cmds/s")
	reportQuantiles(b, "cmd", slices.Concat(lat...))
}

// BenchmarkIdleSessionMemory starts 10 sessions, runs one command in
// each so that its persistent shell exists, and sums the memory of each
// session's processes: bwrap outside the sandbox and every process in
// its pid namespace. RSS counts the shared busybox and libc pages once
// per process; PSS divides them among the processes that map them, so
// it is the fair figure for what one more session costs. den-heap is
// den's own Go heap per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions = 10
	backend := newBackend(b)
	sandboxtest.Rootfs(b)
	heap0 := heapInUse()
	envs := make([]*sandboxtest.Env, sessions)
	for i := range envs {
		envs[i] = sandboxtest.Start(b, backend)
		envs[i].Run(b, "true")
	}
	heap1 := heapInUse()
	p := envs[0].Session.Process()
	members, _ := p.Members()
	for _, pid := range append([]int{p.Pid()}, members...) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		r, s, _ := smapsRollup(pid)
		b.Logf("session 0: pid %d %-8s RSS %5d kB  PSS %5d kB", pid, strings.TrimSpace(string(comm)), r, s)
	}
	var rss, pss, procs int
	for b.Loop() {
		rss, pss, procs = 0, 0, 0
		for _, e := range envs {
			p := e.Session.Process()
			members, err := p.Members()
			if err != nil {
				b.Fatal(err)
			}
			for _, pid := range append([]int{p.Pid()}, members...) {
				r, s, err := smapsRollup(pid)
				if err != nil {
					b.Fatal(err)
				}
				rss += r
				pss += s
				procs++
			}
		}
	}
	mb := func(kb int) float64 { return float64(kb) / 1024 / sessions }
	b.ReportMetric(mb(rss), "MB-RSS/session")
	b.ReportMetric(mb(pss), "MB-PSS/session")
	b.ReportMetric(float64(procs)/sessions, "procs/session")
	b.ReportMetric(float64(heap1-heap0)/1024/sessions, "KB-den-heap/session")
}

// smapsRollup returns a process's resident and proportional set sizes,
// in KiB.
func smapsRollup(pid int) (rss, pss int, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "Rss":
			rss = n
		case "Pss":
			pss = n
		}
	}
	return rss, pss, sc.Err()
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
