package browser

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// needBrowser fails the test in CI (skips elsewhere) when a program the
// browser needs is missing.
func needBrowser(t testing.TB) {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "nsenter", "util-linux")
	sandboxtest.Need(t, "busybox", "busybox-static")
	if _, err := findChromium(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
}

// startComputer starts a busybox computer's session, network on.
func startComputer(t testing.TB) (*computer.Computer, *computer.Session) {
	t.Helper()
	needBrowser(t)
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(t.TempDir(), b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Computer("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
		t.Fatal(err)
	}
	s, err := c.Start(context.Background(), "s1", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// listenInside opens a TCP listener on 127.0.0.1 of the computer's own
// network namespace: a socket belongs to the namespace it was made in,
// so den's test serves the computer's localhost from the host. (The
// thread that joined the namespace is never unlocked, so it ends with
// its goroutine.) It needs root.
func listenInside(t testing.TB, s *computer.Session, port int) net.Listener {
	t.Helper()
	sandboxtest.NeedRoot(t, "serving inside a computer's network namespace from the test needs root")
	pid, ok := s.Process().HostPid(1)
	if !ok {
		t.Fatal("the computer has no first process")
	}
	ch := make(chan any, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- err
			return
		}
		defer own.Close()
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
		if err != nil {
			ch <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- err
			return
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		// Back to den's namespace; a thread that cannot go back stays
		// locked, and ends with the goroutine.
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			ch <- err
			return
		}
		ch <- l
	}()
	switch v := (<-ch).(type) {
	case error:
		t.Fatal(v)
	case net.Listener:
		t.Cleanup(func() { v.Close() })
		return v
	}
	return nil
}

// serveInside serves h on the computer's localhost and returns its
// base URL there.
func serveInside(t testing.TB, s *computer.Session, h http.Handler) string {
	t.Helper()
	l := listenInside(t, s, 0)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// fixture is a browser for one session of a computer that serves the
// test site on its localhost.
type fixture struct {
	b        *Browser
	s        *Session
	comp     *computer.Session
	computer *computer.Computer
	site     *site
	base     string // the site's URL inside the computer
	env      Env
}

func newFixture(t testing.TB, opts ...func(*Options)) *fixture {
	t.Helper()
	c, cs := startComputer(t)
	f := &fixture{comp: cs, computer: c, site: newSite()}
	f.base = serveInside(t, cs, f.site)
	o := Options{Dir: filepath.Join(c.AgentDir("browser")), Log: func(s string) { t.Log(s) }}
	for _, fn := range opts {
		fn(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	f.b = b
	dir := c.SessionDir("s1")
	f.env = Env{Computer: cs.Process(), Workspace: filepath.Join(dir, "workspace"), Files: filepath.Join(dir, "browser")}
	if f.s, err = b.Session("s1", f.env); err != nil {
		t.Fatal(err)
	}
	return f
}

// do runs an action and fails the test on a Go error.
func (f *fixture) do(t testing.TB, a Action) *Result {
	t.Helper()
	r, err := f.s.Do(context.Background(), a)
	if err != nil {
		t.Fatalf("%s: %v", a.Name, err)
	}
	return r
}

// ok runs an action that must succeed.
func (f *fixture) ok(t testing.TB, a Action) *Result {
	t.Helper()
	r := f.do(t, a)
	if !r.OK() {
		t.Fatalf("%s: %s: %s", a.Name, r.Code, r.Text())
	}
	return r
}

// index finds the index of the element whose line in the latest
// snapshot contains all of parts.
func indexOf(t testing.TB, r *Result, parts ...string) int {
	t.Helper()
	if r.Snapshot == nil {
		t.Fatalf("no snapshot in %s", r.Text())
	}
	for _, line := range strings.Split(r.Snapshot.Text, "\n") {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n, err := strconv.Atoi(line[1:strings.Index(line, "]")])
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no element with %q in the snapshot:\n%s", parts, r.Snapshot.Text)
	return 0
}

// eventually polls cond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still not so after 10 s", what)
}
