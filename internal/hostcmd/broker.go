package hostcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostcmd/wire"
)

// SocketName is the socket's name in its folder.
const SocketName = "hostcmd.sock"

// RequestTimeout bounds the wait for a client's request frame.
const RequestTimeout = 10 * time.Second

// stdinWindow is how much of a client's stdin den buffers ahead of the
// handler.
const stdinWindow = 256 << 10

// SessionInfo identifies the session a socket belongs to.
type SessionInfo struct {
	Agent   string
	Session string
}

// Handler serves host command calls. Serve returns the exit code
// (0..255; anything else becomes 1). It must return once ctx is done.
type Handler interface {
	Serve(ctx context.Context, call *Call) int
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, call *Call) int

// Serve calls f.
func (f HandlerFunc) Serve(ctx context.Context, call *Call) int { return f(ctx, call) }

// Call is one run of a host command.
type Call struct {
	// Session is the session of the socket the call arrived on.
	Session SessionInfo
	// Command is the base name of argv[0] (the Mux replaces an alias by
	// the command it stands for).
	Command string
	// Args are argv[1:].
	Args []string
	// Cwd is the client's working directory, a path inside the computer.
	Cwd string
	// Env holds the selected variables the client sent (see the
	// package documentation); it never decides the session.
	Env map[string]string
	// StdinTTY says the client's stdin is a terminal; Stdin is then
	// empty.
	StdinTTY bool
	// PID is the host pid of the client process, from the kernel
	// (SO_PEERCRED); 0 when unknown.
	PID int
	// Stdin streams the client's standard input. It need not be read.
	Stdin io.Reader
	// Stdout and Stderr stream to the client. Writes block while the
	// client is slow and fail once the call's context is done.
	Stdout, Stderr io.Writer
}

// Broker serves host commands for every session of a den.
type Broker struct {
	h   Handler
	log func(string)

	mu        sync.Mutex
	listeners map[*Listener]struct{}
	closed    bool
}

// NewBroker returns a broker that hands every call to h. log receives
// what den did not expect from clients (malformed frames, handler
// panics); nil discards it.
func NewBroker(h Handler, log func(string)) *Broker {
	if log == nil {
		log = func(string) {}
	}
	return &Broker{h: h, log: log, listeners: make(map[*Listener]struct{})}
}

// Listener is one session's socket.
type Listener struct {
	b       *Broker
	session SessionInfo
	dir     string
	ln      *net.UnixListener
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

// Listen creates dir (mode 0700) when needed and listens on
// dir/hostcmd.sock (mode 0600) for calls of session. dir is bound into
// the session's computer, so it must hold nothing else: a stale socket
// is replaced, anything else is ErrDirNotEmpty.
func (b *Broker) Listen(dir string, session SessionInfo) (*Listener, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hostcmd: listen: %w", err)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	ln, err := listenUnix(dir)
	if err != nil {
		return nil, err
	}
	l := &Listener{b: b, session: session, dir: dir, ln: ln}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		ln.Close()
		os.Remove(filepath.Join(dir, SocketName))
		return nil, ErrClosed
	}
	b.listeners[l] = struct{}{}
	b.mu.Unlock()
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// prepareDir checks that dir is a real folder holding at most a stale
// socket, which it removes.
func prepareDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("hostcmd: listen: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("hostcmd: listen: %s is not a folder", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("hostcmd: listen: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("hostcmd: listen: %w", err)
	}
	for _, e := range entries {
		if e.Name() == SocketName && e.Type()&os.ModeSocket != 0 {
			if err := os.Remove(filepath.Join(dir, SocketName)); err != nil {
				return fmt.Errorf("hostcmd: listen: stale socket: %w", err)
			}
			continue
		}
		return fmt.Errorf("%w: %s holds %s", ErrDirNotEmpty, dir, e.Name())
	}
	return nil
}

// listenUnix binds dir/hostcmd.sock. A path longer than a socket
// address allows is reached through /proc/self/fd of the open folder.
func listenUnix(dir string) (*net.UnixListener, error) {
	path := filepath.Join(dir, SocketName)
	addr := path
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		d, err := os.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("hostcmd: listen: %w", err)
		}
		defer d.Close()
		addr = "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + SocketName
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("hostcmd: listen %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("hostcmd: listen: %w", err)
	}
	return ln, nil
}

// Close closes every listener.
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	ls := make([]*Listener, 0, len(b.listeners))
	for l := range b.listeners {
		ls = append(ls, l)
	}
	b.mu.Unlock()
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Session is the session the listener serves.
func (l *Listener) Session() SessionInfo { return l.session }

// Dir is the host folder to bind at /run/den-host.
func (l *Listener) Dir() string { return l.dir }

// Path is the socket's host path.
func (l *Listener) Path() string { return filepath.Join(l.dir, SocketName) }

// Close stops accepting, cancels running calls, waits for their
// handlers and removes the socket. It is safe to call more than once.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.ln.Close()
		l.cancel()
		l.wg.Wait()
		if rerr := os.Remove(l.Path()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
		l.b.mu.Lock()
		delete(l.b.listeners, l)
		l.b.mu.Unlock()
	})
	return err
}

func (l *Listener) accept() {
	defer l.wg.Done()
	for {
		conn, err := l.ln.AcceptUnix()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			l.b.log(fmt.Sprintf("hostcmd: accept (%s): %v", l.session.Session, err))
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := l.serve(conn); err != nil {
				l.b.log(fmt.Sprintf("hostcmd: session %s: %v", l.session.Session, err))
			}
		}()
	}
}

// serve runs one call.
func (l *Listener) serve(conn *net.UnixConn) error {
	defer conn.Close()
	r := wire.NewReader(bufio.NewReaderSize(conn, 64<<10))
	out := &conduit{conn: conn}

	conn.SetReadDeadline(time.Now().Add(RequestTimeout))
	typ, p, err := r.Next()
	if err == nil && typ != wire.TypeRequest {
		err = fmt.Errorf("%w: first frame is %q, not a request", wire.ErrFrame, typ)
	}
	var req wire.Request
	if err == nil {
		req, err = wire.ParseRequest(p)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil // a probe: connected and left
		}
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		out.frame(wire.TypeStderr, []byte("den: "+err.Error()+"\n"))
		out.frame(wire.TypeExit, wire.ExitPayload(1))
		return fmt.Errorf("request: %w", err)
	}
	conn.SetReadDeadline(time.Time{})

	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	stdin := newStdinBuffer(stdinWindow)
	if req.StdinTTY {
		stdin.closeWrite()
	}
	call := &Call{
		Session:  l.session,
		Command:  filepath.Base(req.Args[0]),
		Args:     req.Args[1:],
		Cwd:      req.Cwd,
		Env:      envMap(req.Env),
		StdinTTY: req.StdinTTY,
		PID:      peerPID(conn),
		Stdin:    stdin,
		Stdout:   &stream{out, wire.TypeStdout},
		Stderr:   &stream{out, wire.TypeStderr},
	}

	// Cancellation unblocks everything: the handler's reads of stdin,
	// its writes (the deadline), and the reader below.
	stopStdin := context.AfterFunc(ctx, func() { stdin.fail(ctx.Err()) })
	defer stopStdin()
	stopConn := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })

	var readErr error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		readErr = readStdin(r, stdin, req.StdinTTY)
		// The client went away (or broke the protocol) before the exit
		// frame: the call is over.
		cancel()
	}()

	code := l.run(ctx, call)
	stdin.closeRead()
	if stopConn() {
		out.frame(wire.TypeExit, wire.ExitPayload(code))
	}
	conn.Close()
	cancel()
	<-readerDone
	if readErr != nil && errors.Is(readErr, wire.ErrFrame) {
		return readErr
	}
	return nil
}

// run calls the handler; a panic becomes an internal error.
func (l *Listener) run(ctx context.Context, call *Call) (code int) {
	defer func() {
		if v := recover(); v != nil {
			l.b.log(fmt.Sprintf("hostcmd: %s panicked: %v\n%s", call.Command, v, debug.Stack()))
			fmt.Fprintf(call.Stderr, "%s: internal error\n", call.Command)
			code = ExitError
		}
	}()
	code = l.b.h.Serve(ctx, call)
	if code < 0 || code > 255 {
		code = ExitError
	}
	return code
}

// readStdin moves stdin frames into buf until the client's end of
// file, then waits for the connection to end; any other frame is a
// protocol error.
func readStdin(r *wire.Reader, buf *stdinBuffer, tty bool) error {
	eof := false
	for {
		typ, p, err := r.Next()
		if err != nil {
			if !eof {
				buf.fail(io.ErrUnexpectedEOF)
			}
			return err
		}
		switch {
		case typ == wire.TypeStdin && !eof && !tty:
			if !buf.write(p) {
				// The handler is done with stdin; keep reading to see
				// the client leave.
				continue
			}
		case typ == wire.TypeStdinEOF && !eof:
			eof = true
			buf.closeWrite()
		default:
			err := fmt.Errorf("%w: unexpected %q frame from the client", wire.ErrFrame, typ)
			buf.fail(err)
			return err
		}
	}
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		for i := 0; i < len(e); i++ {
			if e[i] == '=' {
				if k := e[:i]; wire.SelectedEnv(k) {
					m[k] = e[i+1:]
				}
				break
			}
		}
	}
	return m
}

func peerPID(conn *net.UnixConn) int {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// conduit writes frames to the client, one at a time.
type conduit struct {
	mu   sync.Mutex
	conn *net.UnixConn
}

func (c *conduit) frame(typ byte, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := wire.Header(typ, len(p))
	bufs := net.Buffers{h[:], p}
	_, err := bufs.WriteTo(c.conn)
	return err
}

// stream is a Call's Stdout or Stderr.
type stream struct {
	c   *conduit
	typ byte
}

func (s *stream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), wire.MaxData)]
		if err := s.c.frame(s.typ, chunk); err != nil {
			return n, fmt.Errorf("hostcmd: write to client: %w", err)
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// stdinBuffer is a bounded pipe from the connection reader to the
// handler. Unlike io.Pipe it lets the reader run ahead by a window, so
// that a handler which never reads stdin does not stop den from seeing
// the client leave.
type stdinBuffer struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	max    int
	eof    bool  // the client sent its end of file
	err    error // the stream broke
	closed bool  // the handler is done
}

func newStdinBuffer(max int) *stdinBuffer {
	b := &stdinBuffer{max: max}
	b.cond.L = &b.mu
	return b
}

// write appends p, waiting for room; false means the handler is done.
func (b *stdinBuffer) write(p []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf)+len(p) > b.max && !b.closed && b.err == nil {
		b.cond.Wait()
	}
	if b.closed || b.err != nil {
		return false
	}
	b.buf = append(b.buf, p...)
	b.cond.Broadcast()
	return true
}

func (b *stdinBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 && !b.eof && b.err == nil && !b.closed {
		b.cond.Wait()
	}
	switch {
	case len(b.buf) > 0 && !b.closed:
		n := copy(p, b.buf)
		b.buf = b.buf[n:]
		if len(b.buf) == 0 {
			b.buf = b.buf[:0:0]
		}
		b.cond.Broadcast()
		return n, nil
	case b.err != nil:
		return 0, b.err
	case b.closed:
		return 0, io.ErrClosedPipe
	}
	return 0, io.EOF
}

func (b *stdinBuffer) closeWrite() {
	b.mu.Lock()
	b.eof = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *stdinBuffer) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *stdinBuffer) closeRead() {
	b.mu.Lock()
	b.closed = true
	b.buf = nil
	b.cond.Broadcast()
	b.mu.Unlock()
}
