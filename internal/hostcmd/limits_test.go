package hostcmd_test

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostcmd/wire"
)

// clock is a time the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// blocker is a handler whose calls wait for release.
type blocker struct {
	served  atomic.Int32
	started chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 64), release: make(chan struct{})}
}

func (b *blocker) Serve(ctx context.Context, c *hostcmd.Call) int {
	b.served.Add(1)
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return 0
}

// refusals counts the refusal lines in a log.
func refusals(lg *logs) int { return strings.Count(lg.String(), "refused") }

// The 17th call at once is refused with a message and exit status 1,
// without reaching the handler, while the 16 run on; once they are
// done, as many run again. Refusals reach the log once a second.
func TestMaxConcurrent(t *testing.T) {
	h := newBlocker()
	clk := newClock()
	l, lg := listen(t, h, hostcmd.WithClock(clk.now))
	var running []*exec.Cmd
	for range 16 {
		c := command(t, l.Path(), "den-model", "run")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		running = append(running, c)
	}
	for range 16 {
		<-h.started
	}
	const want = "den-model: den: too many host commands running at once in this session (16); wait for some to finish\n"
	for range 3 {
		_, e, code := run(t, command(t, l.Path(), "den-model", "run"), strings.NewReader("a prompt"))
		if code != hostcmd.ExitError || e != want {
			t.Errorf("17th call: exit %d, stderr %q", code, e)
		}
	}
	if n := h.served.Load(); n != 16 {
		t.Errorf("%d calls reached the handler", n)
	}
	if n := refusals(lg); n != 1 {
		t.Errorf("%d refusals logged in the same second:\n%s", n, lg)
	}
	clk.add(time.Second)
	if _, _, code := run(t, command(t, l.Path(), "den-model", "run"), nil); code != hostcmd.ExitError {
		t.Errorf("call over the limit: exit %d", code)
	}
	if n := refusals(lg); n != 2 || !strings.Contains(lg.String(), "refused 3 calls since the last report") {
		t.Errorf("a second later:\n%s", lg)
	}

	close(h.release)
	for _, c := range running {
		if err := c.Wait(); err != nil {
			t.Errorf("running call: %v", err)
		}
	}
	// As soon as a call has exited its slot is free: 16 run again.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, e, code := run(t, command(t, l.Path(), "den-model", "run"), nil); code != 0 {
				t.Errorf("after the others finished: exit %d, stderr %q", code, e)
			}
		})
	}
	wg.Wait()
}

// A burst beyond the rate is refused; as time passes calls are
// accepted again, up to a burst's worth.
func TestRateLimit(t *testing.T) {
	rec := &recorder{}
	clk := newClock()
	l, lg := listen(t, rec, hostcmd.WithLimits(hostcmd.Limits{CallsPerMinute: 60}), hostcmd.WithClock(clk.now))
	call := func() (string, int) {
		_, e, code := run(t, command(t, l.Path(), "den-notify", "x"), nil)
		return e, code
	}
	burst := func(n int) {
		t.Helper()
		for i := range n {
			if e, code := call(); code != 0 {
				t.Fatalf("call %d of %d: exit %d, stderr %q", i+1, n, code, e)
			}
		}
		const want = "den-notify: den: more than 60 host commands a minute in this session; slow down\n"
		if e, code := call(); code != hostcmd.ExitError || e != want {
			t.Fatalf("call %d: exit %d, stderr %q", n+1, code, e)
		}
	}
	burst(6) // a tenth of a minute's worth at once
	clk.add(time.Second)
	burst(1)
	clk.add(time.Hour)
	burst(6) // no more than a burst, however long den waited
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := len(rec.calls); n != 13 {
		t.Errorf("%d calls reached the handler, want 13", n)
	}
	if n := refusals(lg); n != 3 {
		t.Errorf("%d refusals logged in three distinct seconds:\n%s", n, lg)
	}
}

// A connection that never sends its request holds a slot until
// RequestTimeout, then den closes it and the slot is free.
func TestRequestTimeout(t *testing.T) {
	l, lg := listen(t, &recorder{}, hostcmd.WithLimits(hostcmd.Limits{MaxConcurrent: 2, RequestTimeout: 200 * time.Millisecond}))
	var idle []net.Conn
	for range 2 {
		conn, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle = append(idle, conn)
	}
	if _, e, code := run(t, command(t, l.Path(), "den-notify", "x"), nil); code != hostcmd.ExitError || !strings.Contains(e, "too many host commands running at once in this session (2)") {
		t.Errorf("third call while two connections are idle: exit %d, stderr %q", code, e)
	}
	for _, conn := range idle {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if a := readAnswer(conn); a.code != hostcmd.ExitError || a.stderr != "den: no request within 200ms\n" {
			t.Errorf("idle connection: %+v", a)
		}
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("idle connection not closed: %v", err)
		}
	}
	if _, e, code := run(t, command(t, l.Path(), "den-notify", "x"), nil); code != 0 {
		t.Errorf("after the idle connections were closed: exit %d, stderr %q", code, e)
	}
	if !strings.Contains(lg.String(), "no request within 200ms") {
		t.Errorf("log:\n%s", lg)
	}
}

// Calls that do not read their stdin hold no more of it, together,
// than the session's MaxBufferedBytes: den stops reading their sockets.
// A call that reads streams through once they are done, and every byte
// of the budget comes back.
func TestStdinBudget(t *testing.T) {
	const budget = 256 << 10
	h := newBlocker()
	var catted atomic.Int64
	l, _ := listen(t, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		if c.Command == "cat" {
			n, err := io.Copy(io.Discard, c.Stdin)
			catted.Store(n)
			if err != nil {
				return 1
			}
			return 0
		}
		return h.Serve(ctx, c)
	}), hostcmd.WithLimits(hostcmd.Limits{MaxBufferedBytes: budget}))
	chunk := make([]byte, 32<<10)
	const chunks = 32 // 1 MiB each, four windows, four budgets
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if a := rawCall(l.Path(), []string{"wait"}, chunk, chunks); a.code != 0 {
				t.Errorf("waiting call: %+v", a)
			}
		})
	}
	for range 4 {
		<-h.started
	}
	// Wait until den has filled the budget (less than a frame is left).
	deadline := time.Now().Add(10 * time.Second)
	for hostcmd.Buffered(l) < budget-2*int64(len(chunk)) {
		if time.Now().After(deadline) {
			t.Fatalf("den buffered only %d bytes", hostcmd.Buffered(l))
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a bug to read on
	if n := hostcmd.Buffered(l); n > budget {
		t.Errorf("den buffered %d bytes of stdin, budget %d", n, budget)
	}
	cat := make(chan answer)
	go func() { cat <- rawCall(l.Path(), []string{"cat"}, chunk, chunks) }()
	close(h.release)
	wg.Wait()
	if a := <-cat; a.code != 0 || catted.Load() != chunks*int64(len(chunk)) {
		t.Errorf("cat: %+v, read %d bytes", a, catted.Load())
	}
	if n := hostcmd.Buffered(l); n != 0 {
		t.Errorf("%d bytes of the budget not given back", n)
	}
}

// A refused call's request is read for its name, whatever its size,
// and its stdin is not: a refused client that streams stdin still gets
// its answer.
func TestRefusedRequest(t *testing.T) {
	h := newBlocker()
	l, _ := listen(t, h, hostcmd.WithLimits(hostcmd.Limits{MaxConcurrent: 1}))
	go rawCall(l.Path(), []string{"wait"}, nil, 0)
	<-h.started
	defer close(h.release)
	big := make([]string, 0, 1000)
	for range cap(big) {
		big = append(big, strings.Repeat("y", 1000))
	}
	for _, args := range [][]string{
		{"/usr/local/bin/den-x"},
		append([]string{"den-x"}, big...), // a request of 1 MB
	} {
		a := rawCall(l.Path(), args, make([]byte, 32<<10), 64)
		if a.code != hostcmd.ExitError || a.stderr != "den-x: den: too many host commands running at once in this session (1); wait for some to finish\n" {
			t.Errorf("%d args: %+v", len(args), a)
		}
		// The answer can reach the client before den has let go of the
		// refused call; den reads the names of as many refused calls at
		// once as it runs calls (1 here).
		for deadline := time.Now().Add(10 * time.Second); hostcmd.Refusing(l) > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	// A request den cannot name the command of is refused all the same.
	conn, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(wire.AppendFrame(nil, wire.TypeRequest, []byte("DENH")))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if a := readAnswer(conn); a.code != hostcmd.ExitError || !strings.HasPrefix(a.stderr, "den: too many host commands") {
		t.Errorf("unnamed refusal: %+v", a)
	}
	if n := h.served.Load(); n != 1 {
		t.Errorf("%d calls reached the handler", n)
	}
}
