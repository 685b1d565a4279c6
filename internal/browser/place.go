package browser

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Computer is the running computer of a session, whose user and network
// namespaces Chromium joins. A sandbox.Process satisfies it.
type Computer interface {
	// HostPid maps a pid inside the computer to a host pid; ok is false
	// when no such process runs there.
	HostPid(inner int) (host int, ok bool)
}

// nsID names a namespace: the device and inode of its /proc/PID/ns file.
type nsID struct{ dev, ino uint64 }

func nsOf(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// place is a computer as Chromium sees it: the namespaces it joins, and
// the host ids of the computer's root, which Chromium runs as.
type place struct {
	pid       int      // the computer's first process (pid 1 inside)
	pidfd     *os.File // pins pid: while it reports the process alive, pid is that process
	user, net nsID
	uid, gid  int // host ids of root inside (the user namespace's owner)
}

// findPlace pins the computer's first process and reads its namespaces.
// The pidfd is opened before the namespaces are read and checked alive
// after, so a pid that was reused meanwhile is never mistaken for the
// computer.
func findPlace(c Computer) (*place, error) {
	pid, ok := c.HostPid(1)
	if !ok {
		return nil, fmt.Errorf("%w: the computer is not running", ErrNoComputer)
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("%w: pidfd of pid %d: %v", ErrNoComputer, pid, err)
	}
	p := &place{pid: pid, pidfd: os.NewFile(uintptr(fd), "pidfd "+strconv.Itoa(pid))}
	if err := p.read(c); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *place) read(c Computer) error {
	// The pidfd came after HostPid's answer: make sure it pins the
	// computer's process, not one that took its pid since.
	if again, ok := c.HostPid(1); !ok || again != p.pid {
		return fmt.Errorf("%w: its first process changed while den looked at it", ErrNoComputer)
	}
	dir := "/proc/" + strconv.Itoa(p.pid)
	var err error
	if p.user, err = nsOf(dir + "/ns/user"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoComputer, err)
	}
	if p.net, err = nsOf(dir + "/ns/net"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoComputer, err)
	}
	// A computer in den's own namespaces (proot) has no loopback of its
	// own: there, localhost would be the host's, den's API included.
	for _, ns := range []string{"user", "net"} {
		// The calling thread's: a thread of den that joined another
		// namespace (none should) does not count.
		self, err := nsOf("/proc/thread-self/ns/" + ns)
		if err != nil {
			return fmt.Errorf("browser: den's own %s namespace: %w", ns, err)
		}
		if self == p.user || self == p.net {
			return fmt.Errorf("%w: the computer shares den's own %s namespace: the browser runs only in a computer isolated by bwrap", ErrUnavailable, ns)
		}
	}
	f, err := os.Open(dir + "/ns/user")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoComputer, err)
	}
	owner, err := unix.IoctlGetUint32(int(f.Fd()), unix.NS_GET_OWNER_UID)
	f.Close()
	if err != nil {
		return fmt.Errorf("browser: owner of the computer's user namespace: %w", err)
	}
	gid, err := realGID(p.pid)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoComputer, err)
	}
	p.uid, p.gid = int(owner), gid
	if !p.alive() {
		return fmt.Errorf("%w: its first process exited while den looked at it", ErrNoComputer)
	}
	return nil
}

// alive reports whether the computer's first process still runs.
func (p *place) alive() bool {
	gone := true
	if rc, err := p.pidfd.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { gone = exited(int(fd)) })
	}
	return !gone
}

// wait blocks until the computer's first process exits (true) or the
// pidfd is closed (false).
func (p *place) wait() bool {
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return false
	}
	return rc.Read(func(fd uintptr) bool { return exited(int(fd)) }) == nil
}

func (p *place) close() { p.pidfd.Close() }

// same reports whether q is the same computer as p.
func (p *place) same(q *place) bool { return p.user == q.user && p.net == q.net }

func exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	k, err := unix.Poll(fds, 0)
	return err == nil && k > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}

// realGID is pid's real gid as the host sees it.
func realGID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Gid:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no Gid line in /proc/%d/status", pid)
}
