package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// shell is the session's persistent shell. Commands go to it one at a
// time over a FIFO; each is sourced from a script file, so variables,
// functions and the working directory persist. After each command the
// shell writes, on its control FIFO (fd 8), its exported environment,
// its directory and an end marker carrying the exit status:
//
//	<export -p output>
//	__den_pwd=<dir>
//	__den_end_<nonce> <status>
//
// The marker's nonce is random per shell, so no command output can fake
// it; the output FIFOs carry nothing but the command's own bytes.
type shell struct {
	job         *job
	dir         string // host folder of the job
	in          *os.File
	out, err    int
	ctl         int
	poll        *poller
	ctlBuf      []byte
	nonce       string
	pid         int // host pid of the shell process
	session     *Session
	commandSeen int
}

// shellState is what survives a restart of the shell.
type shellState struct {
	exports string // the shell's own `export -p` output
	pwd     string
}

// restoreScript is shell source that brings a new shell to this state.
func (st *shellState) restoreScript() string {
	var b strings.Builder
	b.WriteString("{\n")
	b.WriteString(st.exports)
	b.WriteString("\n} >/dev/null 2>&1\n")
	b.WriteString("cd " + shellQuote(st.pwd) + " 2>/dev/null || cd " + GuestWorkspace + " 2>/dev/null\n")
	b.WriteString("unset DEN_CMD\n")
	return b.String()
}

// shellState returns the last known state of the persistent shell, or
// nil before its first command.
func (s *Session) shellState() *shellState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastState
}

// Run runs cmd in the session's persistent shell. A shell that died (by
// `exit`, a signal, or a timeout it could not survive) is restarted
// with its exported environment and directory restored, and Run reports
// that in the result's Note.
func (s *Session) Run(ctx context.Context, cmd Command) (*Result, error) {
	timeout, err := s.timeout(cmd.Timeout)
	if err != nil {
		return nil, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	res := &Result{}
	if s.shell != nil && s.shellDead() {
		s.shell.close()
		s.shell = nil
	}
	if s.shell == nil {
		sh, err := s.startShell(ctx)
		if err != nil {
			return nil, err
		}
		s.shell = sh
	}
	sh := s.shell
	sh.commandSeen++
	n := sh.commandSeen

	script := cmd.Script
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	// One command file per shell, rewritten for each command: the shell
	// has read all of the previous one before it reported its end.
	if err := writeFile(filepath.Join(sh.dir, "c"), script); err != nil {
		return nil, fmt.Errorf("sandbox: write command: %w", err)
	}
	guest := GuestRun + "/jobs/" + strconv.Itoa(sh.job.id)
	in := "/dev/null"
	stop := make(chan struct{})
	defer close(stop)
	if cmd.Stdin != nil {
		ipath := filepath.Join(sh.dir, "i"+strconv.Itoa(n))
		if err := stdinFile(ipath, bytes.NewReader(cmd.Stdin), stop, sh.session.own); err != nil {
			return nil, err
		}
		defer os.Remove(ipath)
		in = guest + "/i" + strconv.Itoa(n)
	}
	line := fmt.Sprintf("DEN_CMD=%d; export DEN_CMD; . %s/c <%s; __den_rc=$?; "+
		"{ export -p; printf '\\n__den_pwd=%%s\\n__den_end_%s %%s\\n' \"$PWD\" \"$__den_rc\"; } >&8\n",
		n, guest, in, sh.nonce)

	start := time.Now()
	since := bootTicks()
	capt := newCapture(s.opts.OutputLimit, s.offloadDir(cmd), cmd.OnOutput, cmd.RawOutput, s.own)
	if _, err := sh.in.WriteString(line); err != nil {
		// The shell is gone; start again once.
		sh.close()
		s.shell = nil
		return nil, fmt.Errorf("sandbox: shell: %w", err)
	}
	status := -1
	var ended bool
	ctlReader := func(b []byte) {
		sh.ctlBuf = append(sh.ctlBuf, b...)
		if st, code, ok := sh.parseEnd(); ok {
			s.mu.Lock()
			s.lastState = st
			s.mu.Unlock()
			status, ended = code, true
		}
	}
	done := func() bool {
		if ended {
			return true
		}
		select {
		case <-sh.job.done:
			return true
		default:
			return false
		}
	}
	tree := func() []int {
		return s.tree(nil, "DEN_CMD="+strconv.Itoa(n), sh.pid, since, sh.pid)
	}
	s.collect(ctx, sh.poll, res, timeout, done, tree, sh.pid, func(i int, b []byte) {
		if i == 2 {
			ctlReader(b)
			return
		}
		capt.write(i+1, b)
	})
	res.Duration = time.Since(start)
	if ended {
		res.ExitCode = status
	} else {
		<-sh.job.done
		res.ExitCode = sh.job.status
		if !res.TimedOut && !res.Canceled {
			res.addNote(fmt.Sprintf("the shell exited with status %d; a new one starts with the same environment and directory", sh.job.status))
		} else {
			res.addNote("the shell was restarted with the same environment and directory")
		}
		sh.close()
		s.shell = nil
	}
	if res.TimedOut || res.Canceled {
		res.ExitCode = exitCodeFor(res)
	}
	capt.finish(res)
	return res, nil
}

func (s *Session) shellDead() bool {
	select {
	case <-s.shell.job.done:
		return true
	default:
		return false
	}
}

// startShell asks the supervisor for a new persistent shell and brings
// it to the last known state.
func (s *Session) startShell(ctx context.Context) (*shell, error) {
	j, dir, err := s.newJob()
	if err != nil {
		return nil, err
	}
	sh := &shell{job: j, dir: dir, nonce: nonce(), out: -1, err: -1, ctl: -1}
	fail := func(err error) (*shell, error) {
		sh.close()
		return nil, err
	}
	inFd, err := openFIFO(filepath.Join(dir, "in"), s.own)
	if err != nil {
		return fail(err)
	}
	sh.in = os.NewFile(uintptr(inFd), "shell-in")
	if sh.out, err = openFIFO(filepath.Join(dir, "out"), s.own); err != nil {
		return fail(err)
	}
	if sh.err, err = openFIFO(filepath.Join(dir, "err"), s.own); err != nil {
		return fail(err)
	}
	if sh.ctl, err = openFIFO(filepath.Join(dir, "ctl"), s.own); err != nil {
		return fail(err)
	}
	if sh.poll, err = newPoller(sh.out, sh.err, sh.ctl); err != nil {
		return fail(err)
	}
	s.mu.Lock()
	j.wake = sh.poll.Wake
	s.mu.Unlock()
	sh.session = s
	if err := s.request("shell", j.id); err != nil {
		return fail(err)
	}
	// Restore the last state, then learn the shell's pid.
	var boot strings.Builder
	if st := s.shellState(); st != nil {
		if err := os.WriteFile(filepath.Join(dir, "restore"), []byte(st.restoreScript()), 0o644); err != nil {
			return fail(fmt.Errorf("sandbox: write restore: %w", err))
		}
		fmt.Fprintf(&boot, ". %s/jobs/%d/restore\n", GuestRun, j.id)
	} else {
		fmt.Fprintf(&boot, "cd %s 2>/dev/null\n", GuestWorkspace)
	}
	fmt.Fprintf(&boot, "printf '__den_pid %%s\\n' \"$$\" >&8\n")
	if _, err := sh.in.WriteString(boot.String()); err != nil {
		return fail(fmt.Errorf("sandbox: shell: %w", err))
	}
	inner, err := sh.readPid(ctx)
	if err != nil {
		return fail(err)
	}
	host, ok := s.proc.HostPid(inner)
	if !ok {
		return fail(fmt.Errorf("sandbox: shell pid %d not found", inner))
	}
	sh.pid = host
	return sh, nil
}

// readPid waits for the shell's "__den_pid N" line.
func (sh *shell) readPid(ctx context.Context) (int, error) {
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	var ready []int
	for time.Now().Before(deadline) {
		if i := bytes.IndexByte(sh.ctlBuf, '\n'); i >= 0 {
			line := string(sh.ctlBuf[:i])
			sh.ctlBuf = sh.ctlBuf[i+1:]
			if v, ok := strings.CutPrefix(line, "__den_pid "); ok {
				return strconv.Atoi(v)
			}
			continue
		}
		select {
		case <-sh.job.done:
			return 0, fmt.Errorf("%w: the shell exited at start (status %d)", ErrUnavailable, sh.job.status)
		default:
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		for _, i := range sh.poll.wait(100*time.Millisecond, ready) {
			if i == 2 {
				sh.poll.read(i, buf, func(b []byte) { sh.ctlBuf = append(sh.ctlBuf, b...) })
			} else {
				sh.poll.read(i, buf, func([]byte) {})
			}
		}
	}
	return 0, fmt.Errorf("%w: the shell did not start", ErrUnavailable)
}

// parseEnd looks for the end marker in what the control FIFO delivered.
func (sh *shell) parseEnd() (*shellState, int, bool) {
	marker := []byte("\n__den_end_" + sh.nonce + " ")
	i := bytes.Index(sh.ctlBuf, marker)
	if i < 0 {
		return nil, 0, false
	}
	rest := sh.ctlBuf[i+len(marker):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return nil, 0, false
	}
	code, _ := strconv.Atoi(string(rest[:nl]))
	body := string(sh.ctlBuf[:i])
	sh.ctlBuf = append([]byte(nil), rest[nl+1:]...)
	st := &shellState{pwd: GuestWorkspace}
	if j := strings.LastIndex(body, "\n__den_pwd="); j >= 0 {
		st.pwd = body[j+len("\n__den_pwd="):]
		body = body[:j]
	}
	st.exports = body
	return st, code, true
}

func (sh *shell) close() {
	if sh.in != nil {
		sh.in.Close()
	}
	for _, fd := range []int{sh.out, sh.err, sh.ctl} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	if sh.poll != nil {
		sh.poll.close()
	}
	if sh.session != nil && sh.job != nil {
		select {
		case <-sh.job.done:
		default:
			if sh.pid > 0 {
				unix.Kill(sh.pid, unix.SIGKILL)
			}
		}
		sh.session.forgetJob(sh.job, sh.dir)
	}
}
