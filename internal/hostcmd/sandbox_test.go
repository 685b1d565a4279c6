package hostcmd_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// computer starts a bwrap computer with host commands wired as den
// wires them: links in the rootfs, the shim and the socket folder
// bound.
func computer(t testing.TB, l *hostcmd.Listener) *sandboxtest.Env {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	if err := hostcmd.EnsureLinks(sandboxtest.Rootfs(t), hostcmd.LinkNames()); err != nil {
		t.Fatal(err)
	}
	binds := hostcmd.Binds(shim(t), l.Dir())
	// Root inside connects: the socket and its folder are its own, as
	// den makes them (computer.listenHost).
	sandboxtest.Own(t, l.Dir(), l.Path())
	return sandboxtest.Start(t, b, func(o *sandbox.SessionOptions) {
		o.Spec.Binds = append(o.Spec.Binds, binds...)
		o.Env = append(o.Env, "DEN_SESSION=s1")
	})
}

func TestSandbox(t *testing.T) {
	rec := &recorder{}
	mux := hostcmd.NewMux()
	mux.Handle("den-notify", "usage: den-notify [--title T] MESSAGE", rec)
	var (
		mu     sync.Mutex
		opened []string
	)
	mux.HandleFunc("den-open", "usage: den-open URL|PATH", func(ctx context.Context, c *hostcmd.Call) int {
		// Never reads stdin.
		f, rest := hostcmd.ParseCommon(c.Args)
		mu.Lock()
		opened = append(opened, c.Command+" "+strings.Join(rest, " "))
		mu.Unlock()
		return hostcmd.Write(c.Stdout, hostcmd.OK(c.Command, "open", rest), f)
	})
	lg := &logs{}
	b := hostcmd.NewBroker(mux, lg.add)
	defer b.Close()
	l1, err := b.Listen(filepath.Join(t.TempDir(), "s1"), hostcmd.SessionInfo{Agent: "ag", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.Listen(filepath.Join(t.TempDir(), "s2"), hostcmd.SessionInfo{Agent: "ag", Session: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	e := computer(t, l1)

	r := e.Run(t, "cd /workspace && echo hi | den-notify --title T x")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d: %s", r.ExitCode, r.Output)
	}
	call, stdin := rec.last(t)
	if call.Session != (hostcmd.SessionInfo{Agent: "ag", Session: "s1"}) || call.Command != "den-notify" || call.Cwd != "/workspace" || stdin != "hi\n" {
		t.Errorf("call = %+v, stdin %q", call, stdin)
	}
	if diff := cmp.Diff([]string{"--title", "T", "x"}, call.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &env); err != nil || env["ok"] != true || env["tool"] != "den-notify" {
		t.Errorf("stdout %q: %v", r.Stdout, err)
	}

	t.Run("alias and help", func(t *testing.T) {
		r := e.Run(t, "xdg-open https://example.com --compact -q")
		if r.ExitCode != 0 {
			t.Fatalf("exit %d: %s", r.ExitCode, r.Output)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(opened, []string{"den-open https://example.com"}) || strings.TrimSpace(r.Stdout) != `["https://example.com"]` {
			t.Errorf("xdg-open: %q, printed %q", opened, r.Stdout)
		}
		r = e.Run(t, "den-notify --help")
		if r.ExitCode != 0 || !strings.Contains(r.Stderr, "usage: den-notify") {
			t.Errorf("--help: exit %d %q", r.ExitCode, r.Output)
		}
	})
	t.Run("unknown command", func(t *testing.T) {
		r := e.Run(t, "den-speak hello")
		if r.ExitCode != hostcmd.ExitNotAvailable || !strings.Contains(r.Stdout, hostcmd.CodeNotAvailable) {
			t.Errorf("exit %d: %q", r.ExitCode, r.Output)
		}
	})
	t.Run("no stdin read", func(t *testing.T) {
		// An endless stdin that den-open never reads does not hang it.
		r := e.Run(t, "yes | den-open x >/dev/null; echo rc=$?", 20*time.Second)
		if !strings.Contains(r.Stdout, "rc=0") {
			t.Errorf("%q", r.Output)
		}
	})
	t.Run("spoofing", func(t *testing.T) {
		r := e.Run(t, "DEN_SESSION=s2 DEN_AGENT=other den-notify --session s2 x")
		if r.ExitCode != 0 {
			t.Fatalf("exit %d: %s", r.ExitCode, r.Output)
		}
		call, _ := rec.last(t)
		if call.Session.Session != "s1" || call.Env["DEN_SESSION"] != "s2" {
			t.Errorf("session %+v (env %v)", call.Session, call.Env)
		}
		// The other session's socket is nowhere in this computer.
		r = e.Run(t, "ls -a /run/den-host; test -e "+sandbox.QuoteArgs([]string{l2.Path()})+" && echo FOUND; "+
			"test -e "+sandbox.QuoteArgs([]string{l2.Dir()})+" && echo FOUND; "+
			"DEN_HOSTCMD_SOCKET="+sandbox.QuoteArgs([]string{l2.Path()})+" den-notify x; echo rc=$?")
		if strings.Contains(r.Stdout, "FOUND") || !strings.Contains(r.Stdout, "rc=4") {
			t.Errorf("second session reachable: %q", r.Output)
		}
		if got := strings.Fields(r.Stdout)[:3]; !slices.Equal(got, []string{".", "..", hostcmd.SocketName}) {
			t.Errorf("/run/den-host holds %v", got)
		}
		// The socket folder and the shim are read-only inside.
		r = e.Run(t, "rm -f /run/den-host/hostcmd.sock; touch /run/den-host/x; echo junk >/usr/local/bin/den-hostcmd; den-notify x >/dev/null; echo rc=$?")
		if !strings.Contains(r.Stdout, "rc=0") {
			t.Errorf("computer tampered with host commands: %q", r.Output)
		}
	})
	if strings.Contains(lg.String(), "malformed") {
		t.Errorf("log:\n%s", lg)
	}
	if n := len(hostcmd.LinkNames()); n != 18 {
		t.Errorf("%d link names", n)
	}
}

// BenchmarkSandboxRoundTrip measures `den-notify x` run in a computer's
// persistent shell against a baseline of `true`, and reports the
// medians and their difference, the cost of a host command.
func BenchmarkSandboxRoundTrip(b *testing.B) {
	l, _ := listen(b, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		return hostcmd.Write(c.Stdout, hostcmd.OK(c.Command, "notify", map[string]string{"message": "x"}), hostcmd.Format{Compact: true})
	}), unlimitedRate)
	e := computer(b, l)
	run := func(script string) time.Duration {
		start := time.Now()
		r, err := e.Session.Run(context.Background(), sandbox.Command{Script: script})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%s: %v %+v", script, err, r)
		}
		return time.Since(start)
	}
	run("den-notify x") // page the shim in
	var base, cmd []time.Duration
	b.ResetTimer()
	for b.Loop() {
		base = append(base, run("true"))
		cmd = append(cmd, run("den-notify x"))
	}
	mb, mc := median(base), median(cmd)
	b.ReportMetric(float64(mb.Microseconds())/1000, "ms-true")
	b.ReportMetric(float64(mc.Microseconds())/1000, "ms-den-notify")
	b.ReportMetric(float64((mc-mb).Microseconds())/1000, "ms-hostcmd-median")
}

// BenchmarkHostRoundTrip runs den-hostcmd on the host, without the
// sandbox: process start, connect, request, envelope, exit.
func BenchmarkHostRoundTrip(b *testing.B) {
	l, _ := listen(b, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		return hostcmd.Write(c.Stdout, hostcmd.OK(c.Command, "notify", nil), hostcmd.Format{Compact: true})
	}), unlimitedRate)
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, e, code := run(b, command(b, l.Path(), "den-notify", "x"), nil); code != 0 {
			b.Fatalf("exit %d %s", code, e)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(median(ds).Microseconds())/1000, "ms-median")
}

// unlimitedRate lets a benchmark call as fast as it can.
var unlimitedRate = hostcmd.WithLimits(hostcmd.Limits{CallsPerMinute: math.MaxInt32})

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
