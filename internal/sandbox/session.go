package sandbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for a session's commands.
const (
	DefaultOutputLimit = 256 << 10
	DefaultTimeout     = 10 * time.Minute
	MaxTimeout         = 24 * time.Hour
	DefaultKillGrace   = 2 * time.Second
)

// SessionOptions configure one running computer.
type SessionOptions struct {
	Backend Backend
	// Spec is the sandbox; Start adds the control folder to its binds.
	Spec Spec
	// ControlDir is a host folder den owns for this session's control
	// files (FIFOs and scripts); it is bound read-only at /run/den and
	// removed by Close.
	ControlDir string
	// OffloadDir is the host folder bound at /den/offloads, where capped
	// output is saved.
	OffloadDir string
	// Env is the base environment of every process in the computer.
	Env []string
	// OutputLimit caps the output kept in memory per command.
	OutputLimit int
	// Timeout is the default per-command timeout.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// Log receives lines den did not expect from the sandbox (its own
	// diagnostics); nil discards them.
	Log func(string)
}

// Session is a running computer: one sandbox with a supervisor process
// inside, a persistent shell for commands that run one after another,
// and fresh processes for commands that run at the same time.
//
// Run calls are serialised; Exec calls run concurrently with each other
// and with Run. Close stops every process in the computer.
type Session struct {
	opts SessionOptions
	proc Process
	sh   string // the shell the supervisor found (bash when installed)

	supIn  *os.File // requests to the supervisor
	supOut *os.File

	mu     sync.Mutex // guards jobs, seq, closed
	jobs   map[int]*job
	seq    int
	closed bool

	runMu sync.Mutex // serialises Run; guards shell
	shell *shell

	lastState *shellState // guarded by mu

	readerDone chan struct{}
	startErr   chan error

	own owner // who the control files belong to
}

// owner is the host uid and gid of root inside, when den must give it
// the control files it makes (den is root); uid < 0 otherwise.
type owner struct{ uid, gid int }

func ownerOf(ids IDMap) owner {
	uid, gid, ok := ids.Root()
	if !ok || os.Geteuid() != 0 || uid == 0 {
		return owner{-1, -1}
	}
	return owner{uid, gid}
}

// give makes path (not followed) root inside's, so the sandbox can use
// it.
func (o owner) give(path string) error {
	if o.uid < 0 {
		return nil
	}
	if err := unix.Lchown(path, o.uid, o.gid); err != nil {
		return fmt.Errorf("sandbox: chown %s: %w", path, err)
	}
	return nil
}

// job is a process the supervisor started for den.
type job struct {
	id      int
	started chan struct{} // closed when the supervisor reported the wrapper pid
	pid     int           // wrapper subshell, inside the sandbox's pid namespace
	done    chan struct{} // closed when the wrapper reported the exit status
	status  int
	wake    func() // interrupts whoever collects the job's output
}

// Start starts a computer for one session. It fails closed: if the
// sandbox cannot start, no command runs.
func Start(ctx context.Context, opts SessionOptions) (*Session, error) {
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = DefaultOutputLimit
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.Log == nil {
		opts.Log = func(string) {}
	}
	own := ownerOf(opts.Spec.IDs)
	if err := os.MkdirAll(filepath.Join(opts.ControlDir, "jobs"), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: control folder: %w", err)
	}
	for _, d := range []string{opts.ControlDir, filepath.Join(opts.ControlDir, "jobs")} {
		if err := own.give(d); err != nil {
			return nil, err
		}
	}
	spec := opts.Spec
	spec.Binds = append(append([]Bind(nil), spec.Binds...), Bind{Host: opts.ControlDir, Guest: GuestRun, ReadOnly: true, Internal: true})

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	cmd := &Cmd{
		Args:   []string{"/bin/sh", "-c", supervisorScript, "den-supervisor"},
		Env:    opts.Env,
		Dir:    GuestWorkspace,
		Stdin:  inR,
		Stdout: outW,
		Stderr: outW,
	}
	proc, err := opts.Backend.Start(ctx, &spec, cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	s := &Session{
		opts:       opts,
		proc:       proc,
		supIn:      inW,
		supOut:     outR,
		jobs:       make(map[int]*job),
		readerDone: make(chan struct{}),
		startErr:   make(chan error, 1),
		own:        own,
	}
	go s.readSupervisor()
	select {
	case err := <-s.startErr:
		if err != nil {
			s.Close()
			return nil, err
		}
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	if r, ok := proc.(interface{ Ready() }); ok {
		// The supervisor runs: the sandbox's mounts are made.
		r.Ready()
	}
	return s, nil
}

// Process is the sandbox the session runs in.
func (s *Session) Process() Process { return s.proc }

// Shell is the shell the computer runs commands with.
func (s *Session) Shell() string { return s.sh }

// readSupervisor dispatches the supervisor's reports. Lines before
// "ready" are the sandbox's own complaints (bwrap's errors): they become
// the start error.
func (s *Session) readSupervisor() {
	defer close(s.readerDone)
	sc := bufio.NewScanner(s.supOut)
	sc.Buffer(make([]byte, 4096), 1<<20)
	ready := false
	var early []string
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case !ready && len(f) == 3 && f[0] == "ready":
			ready = true
			s.sh = f[2]
			s.startErr <- nil
		case ready && len(f) == 3 && (f[0] == "started" || f[0] == "done"):
			id, _ := strconv.Atoi(f[1])
			n, _ := strconv.Atoi(f[2])
			s.mu.Lock()
			j := s.jobs[id]
			s.mu.Unlock()
			if j == nil {
				continue
			}
			if f[0] == "started" {
				j.pid = n
				close(j.started)
			} else {
				j.status = n
				close(j.done)
				if j.wake != nil {
					j.wake()
				}
			}
		case !ready:
			early = append(early, line)
		default:
			s.opts.Log(line)
		}
	}
	if !ready {
		msg := strings.TrimSpace(strings.Join(early, "\n"))
		if msg == "" {
			msg = "the sandbox exited before it was ready"
		}
		if err := s.proc.Wait(); err != nil {
			msg += " (" + err.Error() + ")"
		}
		s.startErr <- fmt.Errorf("%w: %s: %s", ErrUnavailable, s.opts.Backend.Name(), msg)
	}
	// The supervisor is gone: every job is over.
	s.mu.Lock()
	s.closed = true
	for _, j := range s.jobs {
		select {
		case <-j.started:
		default:
			close(j.started)
		}
		select {
		case <-j.done:
		default:
			j.status = -1
			close(j.done)
			if j.wake != nil {
				j.wake()
			}
		}
	}
	s.mu.Unlock()
}

// newJob registers a job and returns its id and folder on the host.
func (s *Session) newJob() (*job, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", ErrClosed
	}
	s.seq++
	j := &job{id: s.seq, started: make(chan struct{}), done: make(chan struct{})}
	dir := filepath.Join(s.opts.ControlDir, "jobs", strconv.Itoa(j.id))
	if err := os.Mkdir(dir, 0o700); err != nil {
		s.seq--
		return nil, "", fmt.Errorf("sandbox: job folder: %w", err)
	}
	if err := s.own.give(dir); err != nil {
		os.Remove(dir)
		s.seq--
		return nil, "", err
	}
	s.jobs[j.id] = j
	return j, dir, nil
}

func (s *Session) forgetJob(j *job, dir string) {
	s.mu.Lock()
	delete(s.jobs, j.id)
	s.mu.Unlock()
	os.RemoveAll(dir)
}

// request sends one line to the supervisor.
func (s *Session) request(op string, id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, err := fmt.Fprintf(s.supIn, "%s %d\n", op, id); err != nil {
		return fmt.Errorf("sandbox: supervisor: %w", err)
	}
	return nil
}

// Close stops every process in the computer and removes the control
// folder. It is safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.supIn.Close()
	err := s.proc.Kill()
	s.proc.Wait()
	<-s.readerDone
	s.supOut.Close()
	s.runMu.Lock()
	if s.shell != nil {
		s.shell.close()
		s.shell = nil
	}
	s.runMu.Unlock()
	os.RemoveAll(s.opts.ControlDir)
	return err
}

func (s *Session) timeout(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return s.opts.Timeout, nil
	case d < 0 || d > MaxTimeout:
		return 0, fmt.Errorf("%w: %v (allowed: up to %v)", ErrBadTimeout, d, MaxTimeout)
	}
	return d, nil
}

// stdinFile makes the file a command reads as standard input: /dev/null,
// or a FIFO fed from r by a goroutine. The goroutine opens the FIFO for
// writing, which waits for the command to open it for reading, so the
// end of r reaches the command as an end of file; when stop closes
// first (the command never read it), den opens the reading end itself
// to release the goroutine.
func stdinFile(path string, r io.Reader, stop <-chan struct{}, own owner) error {
	if r == nil {
		return os.Symlink("/dev/null", path)
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return fmt.Errorf("sandbox: mkfifo %s: %w", path, err)
	}
	if err := own.give(path); err != nil {
		return err
	}
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			opened <- nil
			return
		}
		opened <- f
		io.Copy(f, r)
		f.Close()
	}()
	go func() {
		<-stop
		select {
		case f := <-opened:
			if f != nil {
				f.Close()
			}
		default:
			// Release a writer still waiting in open.
			if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				f := <-opened
				if f != nil {
					f.Close()
				}
				unix.Close(fd)
			}
		}
	}()
	return nil
}

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// shellQuote quotes s for any POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteArgs renders argv as one shell command line.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// supervisorScript runs as the sandbox's main process. It reads requests
// on stdin ("job ID" runs jobs/ID/script as a fresh process; "shell ID"
// starts a persistent shell reading jobs/ID/in) and reports "started ID
// PID" and "done ID STATUS" on stdout. It is plain POSIX sh so that it
// runs on busybox, dash and bash alike.
const supervisorScript = `J=/run/den/jobs
if command -v bash >/dev/null 2>&1; then SH=$(command -v bash); else SH=/bin/sh; fi
echo "ready $$ $SH"
while read -r op id; do
  d=$J/$id
  case $op in
  job)
    { DEN_JOB=$id; export DEN_JOB; "$SH" "$d/script" <"$d/in" >"$d/out" 2>"$d/err"; echo "done $id $?"; } &
    echo "started $id $!" ;;
  shell)
    { "$SH" -s <"$d/in" >"$d/out" 2>"$d/err" 8>"$d/ctl"; echo "done $id $?"; } &
    echo "started $id $!" ;;
  esac
done
`

func (s *Session) offloadDir(cmd Command) string {
	if cmd.NoOffload {
		return ""
	}
	return s.opts.OffloadDir
}
