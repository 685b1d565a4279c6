package egress_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	netns.MaybeHelper()
	code := m.Run()
	if probeBin != "" && os.Getenv("DEN_TEST_PROBE") == "" {
		os.RemoveAll(filepath.Dir(probeBin))
	}
	os.Exit(code)
}

var (
	probeOnce sync.Once
	probeBin  string
	probeErr  error
	probeOut  []byte
)

// probePath is testdata/probe, built once per test binary, static: it
// runs in the busybox computer.
func probePath(t testing.TB) string {
	t.Helper()
	probeOnce.Do(func() {
		if p := os.Getenv("DEN_TEST_PROBE"); p != "" {
			// A throwaway user's run of this binary: the probe its
			// root run built.
			probeBin = p
			return
		}
		dir, err := os.MkdirTemp("", "den-egress-test-")
		if err != nil {
			probeErr = err
			return
		}
		os.Chmod(dir, 0o755)
		probeBin = filepath.Join(dir, "probe")
		cmd := exec.Command("go", "build", "-o", probeBin, "./testdata/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		probeOut, probeErr = cmd.CombinedOutput()
	})
	if probeErr != nil {
		t.Fatalf("build testdata/probe: %v\n%s", probeErr, probeOut)
	}
	return probeBin
}

// box is a busybox computer whose network a test's Net serves, with
// the probe in /workspace.
type box struct {
	env *sandboxtest.Env
}

func startBox(t testing.TB, n *egress.Net) *box {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	probe := probePath(t)
	e := sandboxtest.Start(t, b, func(o *sandbox.SessionOptions) {
		o.Spec.Egress = n
		o.Timeout = 2 * time.Minute
	})
	data, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(e.Workspace, "probe")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, dst)
	return &box{env: e}
}

// probe runs the probe inside with args, and returns what it printed.
func (b *box) probe(t testing.TB, args ...string) string {
	t.Helper()
	r := b.env.Run(t, "/workspace/probe "+strings.Join(args, " "), 2*time.Minute)
	return strings.TrimSpace(r.Output)
}

// records collects what a Net records.
type records struct {
	mu  sync.Mutex
	all []egress.Record
}

func (r *records) add(rec egress.Record) {
	r.mu.Lock()
	r.all = append(r.all, rec)
	r.mu.Unlock()
}

// wait returns the first record for host:port, waiting for it a while
// (a connection is recorded when it ends, just after the client saw
// its end).
func (r *records) wait(t testing.TB, host string, port int) egress.Record {
	t.Helper()
	for range 200 {
		r.mu.Lock()
		for _, rec := range r.all {
			if rec.Host == host && rec.Port == port {
				r.mu.Unlock()
				return rec
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no record for %s:%d in %+v", host, port, r.snapshot())
	return egress.Record{}
}

func (r *records) snapshot() []egress.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]egress.Record(nil), r.all...)
}

// server is a listener on the host's loopback that the computer must
// reach only through den, counting what it accepts.
type server struct {
	addr  string
	token string
	hits  atomic.Int64
}

// httpServer answers every request with its token and the Host it got.
func httpServer(t testing.TB, name string) *server {
	t.Helper()
	s := &server{token: name + "-" + randomHex(6)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprintf(w, "%s host=%s\n", s.token, r.Host)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

// lineServer writes its token as soon as a client connects (a
// protocol whose server speaks first), over TLS when cert is set.
func lineServer(t testing.TB, name string, cert *tls.Certificate) *server {
	t.Helper()
	s := &server{token: name + "-" + randomHex(6)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	if cert != nil {
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.hits.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if tc, ok := c.(*tls.Conn); ok {
					if err := tc.Handshake(); err != nil {
						return
					}
				}
				fmt.Fprintf(c, "%s\n", s.token)
				bufio.NewReader(c).ReadString('\n')
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// ctx is a context for one test's waits.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}
