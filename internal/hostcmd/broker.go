package hostcmd

import (
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

// RequestTimeout is the default bound on the wait for a client's
// request frame (Limits.RequestTimeout).
const RequestTimeout = 10 * time.Second

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
	// Stdin streams the client's standard input as it arrives. den
	// holds at most a bounded window of it ahead of the handler (see
	// Limits.MaxBufferedBytes), so a client that writes faster than
	// the handler reads is slowed down rather than buffered. It need
	// not be read; a handler that reads it all into memory holds as
	// much as the client cares to send, so it should read with a
	// bound of its own.
	Stdin io.Reader
	// Stdout and Stderr stream to the client. Writes block while the
	// client is slow and fail once the call's context is done.
	Stdout, Stderr io.Writer
}

// Broker serves host commands for every session of a den.
type Broker struct {
	h      Handler
	log    func(string)
	limits Limits
	now    func() time.Time // the clock of rate limits and log throttling

	mu        sync.Mutex
	listeners map[*Listener]struct{}
	closed    bool
}

// NewBroker returns a broker that hands every call to h. log receives
// what den did not expect from clients (malformed frames, handler
// panics, refused calls); nil discards it. Each session has the
// default Limits unless WithLimits says otherwise.
func NewBroker(h Handler, log func(string), opts ...Option) *Broker {
	if log == nil {
		log = func(string) {}
	}
	b := &Broker{h: h, log: log, now: time.Now, listeners: make(map[*Listener]struct{})}
	for _, o := range opts {
		o(b)
	}
	b.limits = b.limits.withDefaults()
	return b
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
	limits  Limits
	stdin   *stdinPool

	mu  sync.Mutex
	adm admission
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
	l := &Listener{b: b, session: session, dir: dir, ln: ln, limits: b.limits, stdin: newStdinPool(b.limits.MaxBufferedBytes)}
	l.adm.tokens, l.adm.last = b.limits.burst(), b.now()
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
		if why := l.admit(); why != "" {
			l.refuse(conn, why)
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := l.serve(conn, sync.OnceFunc(l.leave)); err != nil {
				l.b.log(fmt.Sprintf("hostcmd: session %s: %v", l.session.Session, err))
			}
		}()
	}
}

// serve runs one call admitted by admit; leave gives its slot back.
// The slot is given back once the client has its exit status (or the
// connection is over), before den closes the connection, so that a
// client may start its next call as soon as this one exits.
func (l *Listener) serve(conn *net.UnixConn, leave func()) error {
	defer conn.Close()
	defer leave()
	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	// Cancellation unblocks the connection's reads and writes: the
	// handler's, and the reader's below.
	stopConn := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stopConn()
	f := newFrames(conn)
	out := &conduit{conn: conn}

	req, ok, err := l.request(ctx, conn, f, out)
	if !ok {
		return err
	}

	stdin := l.stdin.newBuffer()
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

	stopStdin := context.AfterFunc(ctx, func() { stdin.fail(ctx.Err()) })
	defer stopStdin()

	var readErr error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		readErr = readStdin(f, stdin, req.StdinTTY)
		// The client went away (or broke the protocol) before the exit
		// frame: the call is over.
		cancel()
	}()

	code := l.run(ctx, call)
	stdin.closeRead()
	if stopConn() {
		out.frame(wire.TypeExit, wire.ExitPayload(code))
	}
	leave()
	conn.Close()
	cancel()
	<-readerDone
	if readErr != nil && errors.Is(readErr, wire.ErrFrame) {
		return readErr
	}
	return nil
}

// request reads the call's request within RequestTimeout and answers
// a bad one on the client's stderr; ok is false when the call is over
// (err says why, when den did not expect it).
func (l *Listener) request(ctx context.Context, conn *net.UnixConn, f *frames, out *conduit) (req wire.Request, ok bool, err error) {
	conn.SetReadDeadline(time.Now().Add(l.limits.RequestTimeout))
	req, err = f.request()
	if err != nil {
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return req, false, nil // a probe (connected and left), or den closing
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no request within %v", l.limits.RequestTimeout)
		}
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		out.frame(wire.TypeStderr, []byte("den: "+err.Error()+"\n"))
		out.frame(wire.TypeExit, wire.ExitPayload(1))
		return req, false, fmt.Errorf("request: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	// Cancellation sets a deadline; the one just cleared may have been
	// it.
	return req, ctx.Err() == nil, nil
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
