package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/launch"
)

// StartFunc starts server s's program in the session's computer, as
// computer.Computer.StartRaw does (its environment is the computer's
// base one followed by cmd.Env), under the server's egress policy
// when it has one; cleanup kills what is left and releases the sandbox
// once the program has ended.
type StartFunc func(ctx context.Context, s *Server, cmd *sandbox.Cmd) (proc sandbox.Process, cleanup func(), err error)

// HostNetFunc starts cmd, the program of server s that runs on the
// host, confined to a network of its own under the server's egress
// policy (bwrap.Backend.StartOnHost, served by den's egress); stop
// stops serving it once cmd has been waited for.
type HostNetFunc func(ctx context.Context, s *Server, cmd *exec.Cmd) (stop func(), err error)

// HostPath is the whole PATH of a server den starts on the host.
const HostPath = "/usr/local/bin:/usr/bin:/bin"

// notFound is what the computer's wrapper prints when the command is
// not there (exit 127).
const notFound = "den-mcp: command not found: "

// wrapper starts a server's program in the computer: it says so,
// plainly, when the program is not installed there.
const wrapper = `command -v -- "$1" >/dev/null 2>&1 || { printf '` + notFound + `%s\n' "$1" >&2; exit 127; }
exec "$@"`

// process is a stdio server's running program: its stdin, its stdout
// (only the lines that may be JSON-RPC messages), its stderr kept in
// the server's log, and how it ended.
type process struct {
	stdin  io.WriteCloser
	stdout io.ReadCloser
	done   chan struct{} // closed once the program has ended
	exit   error         // how, once done is closed
	stop   func()        // ends it (idempotent) and waits
}

// exited reports how the program ended, or nil while it runs.
func (p *process) exited() (error, bool) {
	select {
	case <-p.done:
		if p.exit == nil {
			return errors.New("exit status 0"), true
		}
		return p.exit, true
	default:
		return nil, false
	}
}

// startProcess starts the stdio server s: in the computer through
// start, or on the host with a clean environment and home.
func startProcess(ctx context.Context, s *Server, start StartFunc, hostNet HostNetFunc, home string, log *serverLog) (*process, error) {
	command, err := expand(s.Command)
	if err != nil {
		return nil, err
	}
	args, err := expandAll(s.Args)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(s.Env))
	for _, kv := range s.Env {
		v, err := expand(kv.Value)
		if err != nil {
			return nil, err
		}
		env = append(env, kv.Key+"="+v)
	}
	if s.Host {
		return startHost(ctx, s, hostNet, command, args, env, home, log)
	}
	if start == nil {
		return nil, fmt.Errorf("%w: this face runs no computer for the session, and the server runs in it (set \"host\": true to run it on the host)", ErrUnavailable)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	proc, cleanup, err := start(ctx, s, &sandbox.Cmd{
		Args:  append([]string{"/bin/sh", "-c", wrapper, "den-mcp", command}, args...),
		Env:   env,
		Dir:   sandbox.GuestWorkspace,
		Stdin: inR, Stdout: outW, Stderr: errW,
	})
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s in the computer: %w", s.Command, err)
	}
	p := &process{stdin: inW, done: make(chan struct{})}
	var copied sync.WaitGroup
	copied.Go(func() { log.copyFrom(errR) })
	p.stdout = newLineFilter(outR, log)
	go func() {
		p.exit = proc.Wait()
		close(p.done)
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			inW.Close()
			select {
			case <-p.done:
			case <-time.After(time.Second):
			}
			cleanup() // kills what is left, waits, releases
			<-p.done
			outR.Close()
			copied.Wait()
			errR.Close()
		})
	}
	return p, nil
}

// startHost starts a server on the host: PATH=HostPath, HOME its own
// folder under den's data, the variables its config names, and
// nothing else of den's environment. A server with an egress policy
// of its own is confined to it through hostNet.
func startHost(ctx context.Context, s *Server, hostNet HostNetFunc, command string, args, env []string, home string, log *serverLog) (*process, error) {
	_, confined, err := s.EgressPolicy()
	if err != nil {
		return nil, err
	}
	if confined && hostNet == nil {
		return nil, fmt.Errorf("%w: %s has an egress policy of its own, and den cannot confine a host server's network here", ErrUnavailable, s.Name)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	path := command
	if !strings.Contains(command, "/") {
		var err error
		if path, err = lookPath(command); err != nil {
			return nil, fmt.Errorf("%w: %s is not installed on the host (den looks in %s, the PATH host servers get; give a full path as \"command\" otherwise)", ErrNotInstalled, command, HostPath)
		}
	}
	life, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(life, path, args...)
	cmd.Args[0] = command
	cmd.Env = append([]string{"PATH=" + HostPath, "HOME=" + home}, env...)
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	cmd.Stderr = log
	stopNet := func() {}
	if confined {
		stopNet, err = hostNet(ctx, s, cmd)
	} else {
		err = launch.Start(cmd)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start %s on the host: %w", command, err)
	}
	p := &process{stdin: stdin, stdout: newLineFilter(stdout, log), done: make(chan struct{})}
	go func() {
		p.exit = cmd.Wait()
		stopNet()
		// What the server started of its own (npx starts node) goes
		// with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.done)
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			stdin.Close()
			select {
			case <-p.done:
			case <-time.After(time.Second):
				cancel() // SIGTERM to its group, then WaitDelay kills
			}
			<-p.done
			cancel()
		})
	}
	return p, nil
}

// lookPath finds command in HostPath, as the server's own PATH would.
func lookPath(command string) (string, error) {
	for _, dir := range filepath.SplitList(HostPath) {
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// lineFilter passes on the lines of a server's stdout that may be
// JSON-RPC messages (the stdio transport sends one JSON object or
// array a line) and keeps the others in the server's log: a server
// that prints a banner or log lines to stdout still works, and what it
// printed is seen.
type lineFilter struct {
	r    *bufio.Reader
	c    io.Closer
	log  *serverLog
	buf  bytes.Buffer // a line passed on in part
	line []byte       // being read
}

func newLineFilter(r io.ReadCloser, log *serverLog) *lineFilter {
	return &lineFilter{r: bufio.NewReaderSize(r, 64<<10), c: r, log: log}
}

// maxLine bounds one line of a server's stdout.
const maxLine = 16 << 20

func (f *lineFilter) Read(p []byte) (int, error) {
	for f.buf.Len() == 0 {
		chunk, err := f.r.ReadSlice('\n')
		f.line = append(f.line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(f.line) > maxLine {
				f.log.note(fmt.Sprintf("stdout: a line of more than %d bytes, dropped", maxLine))
				f.line = f.line[:0]
				return 0, fmt.Errorf("the server wrote a line of more than %d bytes", maxLine)
			}
			continue
		}
		line := f.line
		f.line = nil
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if t[0] == '{' || t[0] == '[' {
				f.buf.Write(t)
				f.buf.WriteByte('\n')
			} else {
				f.log.stdout(t)
			}
		}
		if err != nil {
			if f.buf.Len() > 0 {
				break
			}
			return 0, err
		}
	}
	return f.buf.Read(p)
}

func (f *lineFilter) Close() error { return f.c.Close() }

// serverLog is the bounded log of a server: the end of its stderr,
// lines of its stdout that were not MCP, and den's notes (starts,
// exits).
type serverLog struct {
	mu      sync.Mutex
	b       []byte
	garbage []byte // the last stdout line that was not MCP
	max     int
}

// logSize bounds a server's log.
const logSize = 64 << 10

func newServerLog() *serverLog { return &serverLog{max: logSize} }

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(p)
	return len(p), nil
}

func (l *serverLog) add(p []byte) {
	l.b = append(l.b, p...)
	if over := len(l.b) - l.max; over > 0 {
		cut := over
		if i := bytes.IndexByte(l.b[over:], '\n'); i >= 0 && i < 512 {
			cut += i + 1
		}
		l.b = append(l.b[:0], l.b[cut:]...)
	}
}

func (l *serverLog) copyFrom(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			l.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (l *serverLog) stdout(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.garbage = append(l.garbage[:0], line[:min(len(line), 200)]...)
	l.add([]byte("[stdout, not MCP] "))
	l.add(line[:min(len(line), 4096)])
	l.add([]byte("\n"))
}

func (l *serverLog) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add([]byte("[den] " + s + "\n"))
}

// String is the log.
func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// tail is the log's last n bytes, from a line's start, for messages.
func (l *serverLog) tail(n int) string {
	s := l.String()
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

// lastGarbage is the last stdout line that was not MCP, or "".
func (l *serverLog) lastGarbage() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.garbage)
}

// hasLine reports whether the log holds a line starting with prefix,
// and returns the rest of it.
func (l *serverLog) hasLine(prefix string) (string, bool) {
	for _, line := range strings.Split(l.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest, true
		}
	}
	return "", false
}
