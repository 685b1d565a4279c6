package terminal_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/server/terminal"
	"den.dev/den/internal/session"
	"den.dev/den/internal/session/sessiontest"
	"den.dev/den/internal/store"
)

// env is a runtime on a fresh data dir whose agents' computers are
// busybox ones under the real sandbox, one session in it, and the
// terminal route served by an httptest server. served gets Serve's
// result for every request.
type env struct {
	rt      *session.Runtime
	st      *store.Store
	session string
	srv     *httptest.Server
	served  chan error
	serving sync.WaitGroup
}

func newEnv(t *testing.T) *env {
	t.Helper()
	se := sessiontest.New(t, nil)
	rt, st := se.RT, se.Store
	ctx := context.Background()
	if err := st.EnsureAgent(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{rt: rt, st: st, session: s.ID, served: make(chan error, 16)}
	h := &terminal.Handler{RT: rt}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/sessions/{id}/terminal", func(w http.ResponseWriter, r *http.Request) {
		e.serving.Add(1)
		defer e.serving.Done()
		err := h.Serve(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		e.served <- err
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		// The clients are gone (their cleanups ran first): every Serve
		// returns, leaving nothing to the next test.
		done := make(chan struct{})
		go func() {
			e.serving.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("Serve did not return after the client left")
		}
		e.srv.Close()
	})
	return e
}

// dial opens the session's terminal.
func (e *env) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/v1/sessions/" + e.session + "/terminal"
	c, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("dial: %v (response %v)", err, resp)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// served waits for Serve to return and gives its result.
func (e *env) serveResult(t *testing.T) error {
	t.Helper()
	select {
	case err := <-e.served:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

// reader accumulates the terminal's output.
type reader struct {
	c   *websocket.Conn
	out bytes.Buffer
}

// until reads binary messages until the output holds want, failing
// after a while or on any other message.
func (rd *reader) until(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !strings.Contains(rd.out.String(), want) {
		typ, b, err := rd.c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v; output so far:\n%s", want, err, rd.out.String())
		}
		if typ != websocket.MessageBinary {
			t.Fatalf("waiting for %q: a text message %s; output so far:\n%s", want, b, rd.out.String())
		}
		rd.out.Write(b)
	}
}

// next reads up to the next text message, keeping the output before it.
func (rd *reader) next(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		typ, b, err := rd.c.Read(ctx)
		if err != nil {
			return "", err
		}
		if typ == websocket.MessageText {
			return string(b), nil
		}
		rd.out.Write(b)
	}
}

func send(t *testing.T, c *websocket.Conn, typ websocket.MessageType, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, typ, []byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// TestEcho: what the client types runs in the shell, and its output
// comes back (hi-42 appears only if the shell computed it; the echo of
// the typing has hi-$((6*7))).
func TestEcho(t *testing.T) {
	e := newEnv(t)
	c := e.dial(t)
	rd := &reader{c: c}
	send(t, c, websocket.MessageBinary, "echo hi-$((6*7))\n")
	rd.until(t, "hi-42")
}

// TestResize: a resize reaches the terminal the shell sees.
func TestResize(t *testing.T) {
	e := newEnv(t)
	c := e.dial(t)
	rd := &reader{c: c}
	// The shell starts on 80x24.
	send(t, c, websocket.MessageBinary, "stty size; echo size-$((1+1))\n")
	rd.until(t, "size-2")
	if !strings.Contains(rd.out.String(), "24 80") {
		t.Fatalf("initial size: output\n%s", rd.out.String())
	}
	send(t, c, websocket.MessageText, `{"type":"resize","cols":123,"rows":45}`)
	send(t, c, websocket.MessageBinary, "stty size; echo size-$((2+2))\n")
	rd.until(t, "size-4")
	if !strings.Contains(rd.out.String(), "45 123") {
		t.Fatalf("after resizing to 123x45: output\n%s", rd.out.String())
	}
}

// TestExit: a shell that exits sends its code and closes the socket
// normally; Serve returns nil.
func TestExit(t *testing.T) {
	e := newEnv(t)
	c := e.dial(t)
	rd := &reader{c: c}
	// Plenty of output just before the exit, all of it before the exit
	// message.
	send(t, c, websocket.MessageBinary, "yes | head -c 300000; echo bye-$((1+2)); exit 3\n")
	msg, err := rd.next(t)
	if err != nil {
		t.Fatalf("no exit message: %v; output\n%s", err, rd.out.String())
	}
	if msg != `{"type":"exit","code":3}` {
		t.Errorf("exit message %s", msg)
	}
	if !strings.Contains(rd.out.String(), "bye-3") {
		t.Errorf("the output before the exit is missing:\n%s", rd.out.String())
	}
	_, err = rd.next(t)
	if s := websocket.CloseStatus(err); s != websocket.StatusNormalClosure {
		t.Errorf("after the exit message: %v (status %v), want a normal close", err, s)
	}
	if err := e.serveResult(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	noTermGoroutines(t)
}

// TestDisconnectKills: a client that goes away without a word takes the
// shell's whole process tree with it.
func TestDisconnectKills(t *testing.T) {
	e := newEnv(t)
	c := e.dial(t)
	rd := &reader{c: c}
	const marker = "1234.5678"
	// A job in the background and one in the foreground, below the
	// login shell, all deaf to the hangup that closing the terminal
	// sends them (a nohup job): only a kill ends them.
	send(t, c, websocket.MessageBinary, "trap '' HUP; sleep "+marker+" & sleep "+marker+"\n")
	deadline := time.Now().Add(30 * time.Second)
	for len(withArgv(t, "sleep", marker)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sleeps never started; output\n%s", rd.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.CloseNow()
	if err := e.serveResult(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	noTermGoroutines(t)
	// Serve returns once the processes are gone; the kernel may take a
	// moment to reap what pid 1 of the sandbox left.
	deadline = time.Now().Add(30 * time.Second)
	for {
		left := withArgv(t, "sleep", marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running after the client left: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noTermGoroutines fails when a goroutine of the package is still
// running: Serve has returned, so none may be left.
func noTermGoroutines(t *testing.T) {
	t.Helper()
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	if strings.Contains(b.String(), "internal/server/terminal.(*term)") {
		t.Errorf("goroutines left after Serve returned:\n%s", b.String())
	}
}

// withArgv lists the host pids whose argv is exactly args.
func withArgv(t *testing.T, args ...string) []string {
	t.Helper()
	want := strings.Join(args, "\x00") + "\x00"
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if string(b) == want {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestTooBig: a message of ReadLimit bytes is taken (the limit is not
// the library's default 32 KiB); one byte more closes the socket with
// 1009 and ends the shell.
func TestTooBig(t *testing.T) {
	e := newEnv(t)
	c := e.dial(t)
	rd := &reader{c: c}
	// A resize padded with a field the protocol ignores.
	resize := `{"type":"resize","cols":100,"rows":30,"pad":"`
	resize += strings.Repeat("x", terminal.ReadLimit-len(resize)-2) + `"}`
	send(t, c, websocket.MessageText, resize)
	send(t, c, websocket.MessageBinary, "stty size; echo up-$((3*3))\n")
	rd.until(t, "up-9")
	if !strings.Contains(rd.out.String(), "30 100") {
		t.Fatalf("a resize of %d bytes was not applied: output\n%s", len(resize), rd.out.String())
	}
	send(t, c, websocket.MessageBinary, strings.Repeat("x", terminal.ReadLimit+1))
	_, err := rd.next(t)
	if s := websocket.CloseStatus(err); s != websocket.StatusMessageTooBig {
		t.Errorf("after a message over the limit: %v (status %v), want %v", err, s, websocket.StatusMessageTooBig)
	}
	if err := e.serveResult(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	noTermGoroutines(t)
}

// TestBadResize: a resize out of range, or a text message of no known
// type, closes the socket with 1008.
func TestBadResize(t *testing.T) {
	e := newEnv(t)
	for _, msg := range []string{
		`{"type":"resize","cols":0,"rows":24}`,
		`{"type":"resize","cols":80,"rows":1001}`,
		`{"type":"paste"}`,
		`resize`,
	} {
		c := e.dial(t)
		rd := &reader{c: c}
		send(t, c, websocket.MessageText, msg)
		_, err := rd.next(t)
		if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
			t.Errorf("%s: %v (status %v), want %v", msg, err, s, websocket.StatusPolicyViolation)
		}
		if err := e.serveResult(t); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// TestMissingSession: a session that does not exist is an error
// wrapping store.ErrNotFound, returned before anything is written.
func TestMissingSession(t *testing.T) {
	e := newEnv(t)
	h := &terminal.Handler{RT: e.rt}
	r := upgradeRequest("no-such-session")
	w := httptest.NewRecorder()
	err := h.Serve(w, r)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Serve: %v, want an error wrapping store.ErrNotFound", err)
	}
	if w.Body.Len() > 0 || len(w.Header()) > 0 {
		t.Errorf("Serve answered itself: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
}

// TestNotWebSocket: a plain GET is ErrNotWebSocket, and nothing is
// started for it.
func TestNotWebSocket(t *testing.T) {
	rt := &countingRuntime{}
	h := &terminal.Handler{RT: rt}
	r := httptest.NewRequest("GET", "/api/v1/sessions/s1/terminal", nil)
	r.SetPathValue("id", "s1")
	w := httptest.NewRecorder()
	if err := h.Serve(w, r); !errors.Is(err, terminal.ErrNotWebSocket) {
		t.Fatalf("Serve: %v, want ErrNotWebSocket", err)
	}
	if n := rt.starts.Load(); n != 0 {
		t.Errorf("%d processes started", n)
	}
	if w.Body.Len() > 0 {
		t.Errorf("Serve answered itself: %d %q", w.Code, w.Body.String())
	}
}

func upgradeRequest(session string) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/sessions/"+session+"/terminal", nil)
	r.SetPathValue("id", session)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	return r
}

// countingRuntime counts the processes asked for and starts none.
type countingRuntime struct{ starts atomic.Int64 }

func (c *countingRuntime) StartRaw(ctx context.Context, sessionID string, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
	c.starts.Add(1)
	return nil, nil, errors.New("not started")
}

var _ terminal.Runtime = (*session.Runtime)(nil)
