package hostcmd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostcmd/wire"
)

// recorder is a Handler that keeps the calls it served.
type recorder struct {
	mu    sync.Mutex
	calls []hostcmd.Call
	stdin []string
	serve func(ctx context.Context, call *hostcmd.Call) int
}

func (r *recorder) Serve(ctx context.Context, call *hostcmd.Call) int {
	if r.serve != nil {
		return r.serve(ctx, call)
	}
	in, _ := io.ReadAll(call.Stdin)
	r.mu.Lock()
	r.calls = append(r.calls, *call)
	r.stdin = append(r.stdin, string(in))
	r.mu.Unlock()
	f, rest := hostcmd.ParseCommon(call.Args)
	return hostcmd.Write(call.Stdout, hostcmd.OK(call.Command, "send", map[string]any{"args": rest}), f)
}

func (r *recorder) last(t *testing.T) (hostcmd.Call, string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		t.Fatal("no call reached the handler")
	}
	return r.calls[len(r.calls)-1], r.stdin[len(r.stdin)-1]
}

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

var session = hostcmd.SessionInfo{Agent: "ag", Session: "s1"}

// listen starts a broker for h on a fresh folder.
func listen(t testing.TB, h hostcmd.Handler, opts ...hostcmd.Option) (*hostcmd.Listener, *logs) {
	t.Helper()
	lg := &logs{}
	b := hostcmd.NewBroker(h, lg.add, opts...)
	l, err := b.Listen(filepath.Join(t.TempDir(), "host"), session)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return l, lg
}

var (
	shimOnce sync.Once
	shimPath string
	shimErr  error
)

// shim is the embedded den-hostcmd, written out once per user and
// machine (ShimPath names it by its hash and writes it atomically, so
// test binaries share it and leave nothing new behind).
func shim(t testing.TB) string {
	t.Helper()
	shimOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "den-hostcmd-test-"+strconv.Itoa(os.Getuid()))
		if shimErr = os.MkdirAll(dir, 0o755); shimErr != nil {
			return
		}
		shimPath, shimErr = hostcmd.ShimPath(dir)
	})
	if shimErr != nil {
		t.Fatal(shimErr)
	}
	return shimPath
}

// command runs the shim on the host as argv[0] name against l's socket.
func command(t testing.TB, sock string, args ...string) *exec.Cmd {
	c := exec.Command(shim(t))
	c.Args = args
	c.Env = []string{"DEN_HOSTCMD_SOCKET=" + sock, "TERM=xterm", "LANG=C.UTF-8", "SECRET=nope", "DEN_SESSION=fake"}
	c.Dir = "/"
	c.WaitDelay = 5 * time.Second
	return c
}

func run(t testing.TB, c *exec.Cmd, stdin io.Reader) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = stdin, &o, &e
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", c.Args, err)
	}
	return o.String(), e.String(), c.ProcessState.ExitCode()
}

func TestRoundTrip(t *testing.T) {
	rec := &recorder{}
	l, _ := listen(t, rec)
	if fi, err := os.Stat(l.Path()); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	out, errOut, code := run(t, command(t, l.Path(), "/usr/local/bin/den-notify", "--compact", "--title", "T", "x"), strings.NewReader("hi\n"))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	call, stdin := rec.last(t)
	if stdin != "hi\n" {
		t.Errorf("stdin = %q", stdin)
	}
	if call.Session != session || call.Command != "den-notify" || call.Cwd != "/" || call.PID == 0 || call.StdinTTY {
		t.Errorf("call = %+v", call)
	}
	if diff := cmp.Diff([]string{"--compact", "--title", "T", "x"}, call.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	// Only the selected variables travel; DEN_SESSION does, but it is
	// just a variable: the session is the socket's.
	if diff := cmp.Diff(map[string]string{"TERM": "xterm", "LANG": "C.UTF-8", "DEN_SESSION": "fake", "DEN_HOSTCMD_SOCKET": l.Path()}, call.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("--compact output is not one line: %q", out)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if env["ok"] != true || env["tool"] != "den-notify" || env["action"] != "send" || env["timestamp"] == nil {
		t.Errorf("envelope = %v", env)
	}
}

// The shim's own name runs the command named by its first argument.
func TestShimAsItself(t *testing.T) {
	rec := &recorder{}
	l, _ := listen(t, rec)
	if _, e, code := run(t, command(t, l.Path(), "den-hostcmd", "den-notify", "x"), nil); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if call, _ := rec.last(t); call.Command != "den-notify" {
		t.Errorf("command = %q", call.Command)
	}
	if _, e, code := run(t, command(t, l.Path(), "den-hostcmd"), nil); code != 2 || !strings.Contains(e, "usage") {
		t.Errorf("bare den-hostcmd: exit %d, %q", code, e)
	}
}

func TestExitCodes(t *testing.T) {
	l, _ := listen(t, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		switch c.Args[0] {
		case "panic":
			panic("boom")
		case "300":
			return 300
		}
		var n int
		json.Unmarshal([]byte(c.Args[0]), &n)
		io.WriteString(c.Stderr, "err:"+c.Args[0])
		return n
	}))
	for _, tc := range []struct {
		arg  string
		code int
	}{{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}, {"4", 4}, {"255", 255}, {"300", 1}, {"panic", 1}} {
		_, e, code := run(t, command(t, l.Path(), "den-x", tc.arg), nil)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.arg, code, tc.code, e)
		}
	}
}

func TestNoSocket(t *testing.T) {
	_, e, code := run(t, command(t, filepath.Join(t.TempDir(), "none.sock"), "den-notify", "x"), nil)
	if code != hostcmd.ExitNotAvailable || !strings.Contains(e, "not available") {
		t.Errorf("exit %d, stderr %q", code, e)
	}
}

// Large streams both ways at once, and a handler writing while it
// never reads stdin: neither may deadlock.
func TestStreaming(t *testing.T) {
	const size = 16 << 20
	data := make([]byte, size)
	rand.Read(data)
	l, _ := listen(t, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		switch c.Command {
		case "cat":
			if _, err := io.Copy(c.Stdout, c.Stdin); err != nil {
				return 1
			}
		case "spew":
			// Never reads stdin.
			for i := 0; i < size; i += 1 << 20 {
				if _, err := c.Stdout.Write(data[i : i+1<<20]); err != nil {
					return 1
				}
			}
		case "both":
			go io.Copy(c.Stderr, c.Stdin)
			c.Stdout.Write(data)
		}
		return 0
	}))
	t.Run("cat", func(t *testing.T) {
		var o bytes.Buffer
		c := command(t, l.Path(), "cat")
		c.Stdin, c.Stdout = bytes.NewReader(data), &o
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.Bytes(), data) {
			t.Fatalf("echoed %d bytes, not the %d sent", o.Len(), len(data))
		}
	})
	t.Run("spew with endless stdin", func(t *testing.T) {
		zero, err := os.Open("/dev/zero")
		if err != nil {
			t.Fatal(err)
		}
		defer zero.Close()
		var o bytes.Buffer
		c := command(t, l.Path(), "spew")
		c.Stdin, c.Stdout = zero, &o
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.Bytes(), data) {
			t.Fatalf("got %d bytes", o.Len())
		}
	})
	t.Run("slow client", func(t *testing.T) {
		c := command(t, l.Path(), "spew")
		pr, pw := io.Pipe()
		c.Stdout = pw
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the client's stdout is full by now
		n, _ := io.Copy(io.Discard, readUntilClose(pr, c, pw))
		if n != size {
			t.Fatalf("got %d bytes", n)
		}
	})
}

// readUntilClose reads pr until c exits.
func readUntilClose(pr *io.PipeReader, c *exec.Cmd, pw *io.PipeWriter) io.Reader {
	go func() { c.Wait(); pw.Close() }()
	return pr
}

// A client that leaves cancels the call; closing the listener cancels
// every running call and removes the socket.
func TestCancel(t *testing.T) {
	started := make(chan struct{}, 2)
	ended := make(chan error, 2)
	l, _ := listen(t, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return 0
	}))
	c := command(t, l.Path(), "den-wait")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-started
	c.Process.Kill()
	c.Wait()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("after the client left: %v", err)
	}

	c = command(t, l.Path(), "den-wait")
	var e bytes.Buffer
	c.Stderr = &e
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-ended
	c.Wait()
	if c.ProcessState.ExitCode() == 0 {
		t.Errorf("client of a closed listener exited 0")
	}
	if _, err := os.Lstat(l.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

// Raw clients that break the protocol get the connection closed and a
// log line; den keeps serving.
func TestMalformed(t *testing.T) {
	rec := &recorder{}
	l, lg := listen(t, rec)
	good := wire.AppendFrame(nil, wire.TypeRequest, wire.AppendRequest(nil, wire.Request{Args: []string{"den-notify", "x"}}))
	for name, b := range map[string][]byte{
		"garbage":         []byte("GET / HTTP/1.1\r\n\r\n"),
		"bad request":     wire.AppendFrame(nil, wire.TypeRequest, []byte("DENH\x01\x00")),
		"stdin first":     wire.AppendFrame(nil, wire.TypeStdin, []byte("x")),
		"server frame":    append(append([]byte{}, good...), wire.AppendFrame(nil, wire.TypeStdout, []byte("x"))...),
		"after eof":       append(append(append([]byte{}, good...), wire.AppendFrame(nil, wire.TypeStdinEOF, nil)...), wire.AppendFrame(nil, wire.TypeStdin, []byte("x"))...),
		"oversized stdin": append(append([]byte{}, good...), wire.TypeStdin, 0x7f, 0xff, 0xff, 0xff),
		// Refused from its header: den does not wait for the megabyte.
		"second request": append(append([]byte{}, good...), wire.TypeRequest, 0x00, 0x10, 0x00, 0x00),
	} {
		conn, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(b)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(conn); err != nil {
			t.Errorf("%s: connection not ended: %v", name, err)
		}
		conn.Close()
	}
	if !strings.Contains(lg.String(), "malformed frame") {
		t.Errorf("log:\n%s", lg)
	}
	if _, e, code := run(t, command(t, l.Path(), "den-notify", "x"), nil); code != 0 {
		t.Errorf("after malformed clients: exit %d %s", code, e)
	}
}

// Whatever a client sends, the call has the socket's session.
func TestSpoofedSession(t *testing.T) {
	rec := &recorder{}
	lg := &logs{}
	b := hostcmd.NewBroker(rec, lg.add)
	defer b.Close()
	l1, err := b.Listen(filepath.Join(t.TempDir(), "s1"), hostcmd.SessionInfo{Agent: "ag", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Listen(filepath.Join(t.TempDir(), "s2"), hostcmd.SessionInfo{Agent: "ag", Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	c := command(t, l1.Path(), "den-sessions", "--session", "s2", "send", "s2", "x")
	c.Env = append(c.Env, "DEN_SESSION=s2", "DEN_AGENT=other")
	if _, e, code := run(t, c, nil); code != 0 {
		t.Fatalf("exit %d %s", code, e)
	}
	if call, _ := rec.last(t); call.Session.Session != "s1" || call.Session.Agent != "ag" {
		t.Errorf("session = %+v, want s1's", call.Session)
	}
}

func TestListenDir(t *testing.T) {
	b := hostcmd.NewBroker(&recorder{}, nil)
	defer b.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), nil, 0o600)
	if _, err := b.Listen(dir, session); !errors.Is(err, hostcmd.ErrDirNotEmpty) {
		t.Errorf("folder with a file: %v", err)
	}
	// A long folder path (over a socket address's 108 bytes) works.
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 60), strings.Repeat("y", 60))
	l, err := b.Listen(long, session)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(l.Path()); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("long path: %v", err)
	}
	entries, _ := os.ReadDir(long)
	if len(entries) != 1 || entries[0].Name() != hostcmd.SocketName {
		t.Errorf("folder holds %v", entries)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Listen(t.TempDir(), session); !errors.Is(err, hostcmd.ErrClosed) {
		t.Errorf("listen on a closed broker: %v", err)
	}
}

func TestStaleSocket(t *testing.T) {
	dir := t.TempDir()
	b := hostcmd.NewBroker(&recorder{}, nil)
	defer b.Close()
	l, err := b.Listen(dir, session)
	if err != nil {
		t.Fatal(err)
	}
	// A den that died leaves its socket; fake that by binding again.
	os.Remove(l.Path())
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: l.Path(), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	l.Close()
	ln2, _ := net.ListenUnix("unix", &net.UnixAddr{Name: l.Path(), Net: "unix"})
	ln2.SetUnlinkOnClose(false)
	ln2.Close()
	l2, err := b.Listen(dir, session)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if _, e, code := run(t, command(t, l2.Path(), "den-notify", "x"), nil); code != 0 {
		t.Errorf("exit %d %s", code, e)
	}
}
