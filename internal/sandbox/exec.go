package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Exec runs cmd as a fresh process in the computer, beside the
// persistent shell and other Exec calls. It starts in the persistent
// shell's current directory with its exported environment.
func (s *Session) Exec(ctx context.Context, cmd Command) (*Result, error) {
	return s.exec(ctx, cmd, nil)
}

// ExecStream is Exec with standard input read from r as it arrives (for
// example den's own standard input).
func (s *Session) ExecStream(ctx context.Context, cmd Command, r io.Reader) (*Result, error) {
	return s.exec(ctx, cmd, r)
}

func (s *Session) exec(ctx context.Context, cmd Command, in io.Reader) (*Result, error) {
	timeout, err := s.timeout(cmd.Timeout)
	if err != nil {
		return nil, err
	}
	j, dir, err := s.newJob()
	if err != nil {
		return nil, err
	}
	defer s.forgetJob(j, dir)

	var script strings.Builder
	if st := s.shellState(); st != nil {
		script.WriteString(st.restoreScript())
	} else {
		script.WriteString("cd " + GuestWorkspace + " 2>/dev/null\n")
	}
	script.WriteString(cmd.Script)
	if !strings.HasSuffix(cmd.Script, "\n") {
		script.WriteString("\n")
	}
	if err := writeFile(filepath.Join(dir, "script"), script.String()); err != nil {
		return nil, fmt.Errorf("sandbox: write script: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	if in == nil && cmd.Stdin != nil {
		in = bytes.NewReader(cmd.Stdin)
	}
	if err := stdinFile(filepath.Join(dir, "in"), in, stop, s.own); err != nil {
		return nil, err
	}
	outFd, err := openFIFO(filepath.Join(dir, "out"), s.own)
	if err != nil {
		return nil, err
	}
	defer unix.Close(outFd)
	errFd, err := openFIFO(filepath.Join(dir, "err"), s.own)
	if err != nil {
		return nil, err
	}
	defer unix.Close(errFd)
	p, err := newPoller(outFd, errFd)
	if err != nil {
		return nil, err
	}
	defer p.close()
	s.mu.Lock()
	j.wake = p.Wake
	s.mu.Unlock()

	start := time.Now()
	if err := s.request("job", j.id); err != nil {
		return nil, err
	}
	capt := newCapture(s.opts.OutputLimit, s.offloadDir(cmd), cmd.OnOutput, cmd.RawOutput, s.own)
	res := &Result{}
	tree := func() []int {
		<-j.started
		wrapper, ok := s.proc.HostPid(j.pid)
		var roots []int
		if ok {
			roots = append(roots, wrapper)
		}
		// A job's wrapper is its parent: no "forked since" rule needed.
		return s.tree(roots, "DEN_JOB="+strconv.Itoa(j.id), 0, 0, wrapper)
	}
	done := func() bool {
		select {
		case <-j.done:
			return true
		default:
			return false
		}
	}
	s.collect(ctx, p, res, timeout, done, tree, 0, func(i int, b []byte) { capt.write(i+1, b) })
	res.ExitCode = j.status
	if res.TimedOut || res.Canceled {
		res.ExitCode = exitCodeFor(res)
	}
	res.Duration = time.Since(start)
	capt.finish(res)
	return res, nil
}

func exitCodeFor(r *Result) int {
	if r.TimedOut {
		return 124
	}
	return 130
}

// collect reads the poller's FIFOs (calling onData with the FIFO's
// index) until done is closed, then drains what is left. When the
// timeout passes or ctx ends, it stops the command's process tree (as
// tree() finds it): SIGTERM, then SIGKILL after the grace time. For a
// command of the persistent shell, shell is the shell's host pid: the
// shell is killed at once so that it runs nothing more of the command;
// it is restarted for the next command with its exported environment
// and directory.
func (s *Session) collect(ctx context.Context, p *poller, res *Result, timeout time.Duration, done func() bool, tree func() []int, shell int, onData func(i int, b []byte)) {
	stopWake := context.AfterFunc(ctx, p.Wake)
	defer stopWake()
	buf := make([]byte, 32<<10)
	var ready []int
	deadline := time.Now().Add(timeout)
	const (
		running = iota
		termSent
		killSent
	)
	phase := running
	var doomed []int
	drain := func() {
		for i := range p.fds {
			p.read(i, buf, func(b []byte) { onData(i, b) })
		}
	}
	for {
		if done() {
			drain()
			if phase == termSent {
				// The command's shell is gone, but what ignored SIGTERM
				// still gets its grace time, then SIGKILL.
				for time.Now().Before(deadline) && anyAlive(doomed) {
					time.Sleep(20 * time.Millisecond)
				}
				signalAll(append(s.stillInside(doomed), tree()...), unix.SIGKILL)
			}
			return
		}
		now := time.Now()
		switch {
		case phase == running && (ctx.Err() != nil || !now.Before(deadline)):
			if ctx.Err() != nil {
				res.Canceled = true
				res.addNote("command canceled; its process tree was stopped")
			} else {
				res.TimedOut = true
				res.addNote(fmt.Sprintf("command timed out after %v; its process tree was stopped", timeout))
			}
			// Find the tree while the shell still holds it together,
			// then end the shell so it runs nothing more.
			doomed = tree()
			if shell > 0 {
				unix.Kill(shell, unix.SIGKILL)
			}
			signalAll(doomed, unix.SIGTERM)
			phase, deadline = termSent, now.Add(s.opts.KillGrace)
		case phase == termSent && !now.Before(deadline):
			signalAll(append(s.stillInside(doomed), tree()...), unix.SIGKILL)
			phase, deadline = killSent, now.Add(time.Minute)
		case phase == killSent && !now.Before(deadline):
			res.addNote("the command could not be stopped")
			drain()
			return
		}
		wait := time.Until(deadline)
		if wait < 0 {
			wait = 0
		}
		for _, i := range p.wait(wait, ready) {
			p.read(i, buf, func(b []byte) { onData(i, b) })
		}
	}
}

// tree finds the processes that belong to one command: those below the
// roots, those whose environment carries tag, and the children of
// parent (when not 0) started since the command began (what a shell
// forks without exec); and everything below those. exclude is never
// included.
func (s *Session) tree(roots []int, tag string, parent int, since uint64, exclude ...int) []int {
	members, err := s.proc.Members()
	if err != nil {
		return nil
	}
	procs := make([]ProcInfo, 0, len(members))
	var seeds []int
	seeds = append(seeds, roots...)
	for _, pid := range members {
		pi, ok := ReadProc(pid)
		if !ok {
			continue
		}
		procs = append(procs, pi)
		if HasEnv(pid, tag) || (parent != 0 && pi.PPid == parent && pi.Start >= since) {
			seeds = append(seeds, pid)
		}
	}
	set := make(map[int]bool)
	for _, pid := range seeds {
		set[pid] = true
	}
	for _, pid := range Descendants(procs, seeds...) {
		set[pid] = true
	}
	for _, pid := range exclude {
		delete(set, pid)
	}
	out := make([]int, 0, len(set))
	for pid := range set {
		if pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// stillInside keeps the pids that are still processes of the sandbox, so
// that a pid reused by a host process in the meantime is never signalled.
func (s *Session) stillInside(pids []int) []int {
	members, err := s.proc.Members()
	if err != nil {
		return nil
	}
	in := make(map[int]bool, len(members))
	for _, m := range members {
		in[m] = true
	}
	var out []int
	for _, pid := range pids {
		if in[pid] {
			out = append(out, pid)
		}
	}
	return out
}

func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if unix.Kill(pid, 0) == nil {
			return true
		}
	}
	return false
}

func signalAll(pids []int, sig unix.Signal) {
	for _, pid := range pids {
		unix.Kill(pid, sig)
	}
}

// writeFile writes a control file with plain system calls (os.WriteFile
// would also try, in vain, to register the file with Go's poller).
func writeFile(path, data string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, []byte(data))
		if err != nil {
			unix.Close(fd)
			return err
		}
		data = data[n:]
	}
	return unix.Close(fd)
}
