package netns

import (
	"context"
	"den.dev/den/internal/sandbox/launch"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What the computer sees: slirp4netns's defaults for --cidr=10.0.2.0/24.
const (
	// Interface is the computer's network interface, a tap device.
	Interface = "tap0"
	// Address is the computer's address on Interface.
	Address = "10.0.2.100/24"
	// Gateway is the computer's default route. Connections to it are
	// refused: with --disable-host-loopback it does not lead to the
	// host's loopback.
	Gateway = "10.0.2.2"
	// Nameserver is slirp4netns's DNS forwarder, which relays port 53
	// to the first nameserver of the host's /etc/resolv.conf.
	Nameserver = "10.0.2.3"
)

const (
	defaultMTU = 65520 // the largest slirp4netns takes is 65521
	maxMTU     = 65521
	minMTU     = 68
	// stopGrace is how long Close waits for slirp4netns to exit after
	// its exit fd closes before it kills it.
	stopGrace = 2 * time.Second
)

// Options for Attach.
type Options struct {
	// Slirp is the path of slirp4netns; "" looks it up on PATH.
	Slirp string
	// MTU of the computer's interface; 0 means 65520, which makes bulk
	// transfers several times faster than Ethernet's 1500.
	MTU int
	// Log receives what den did not expect: a hardening option
	// slirp4netns could not use here, or why it runs as root. nil
	// discards it.
	Log func(string)
}

func (o *Options) log(msg string) {
	if o.Log != nil {
		o.Log(msg)
	}
}

// Net is user-mode networking attached to a sandbox's network namespace.
type Net struct {
	cmd   *exec.Cmd
	out   *tail
	pidfd *os.File // the sandbox's process, watched for its exit
	exitW *os.File // closing it tells slirp4netns to exit

	stopOnce sync.Once
	watched  chan struct{} // closed when watch returns
	exited   chan struct{} // closed when slirp4netns has been waited for
	waitErr  error         // valid after exited is closed

	closeOnce sync.Once
	closeErr  error
}

// hardening is which of slirp4netns's own confinements are on.
type hardening struct {
	sandbox, seccomp bool
}

// Attach gives the network namespace of pid an interface with an
// address, a default route and DNS, through slirp4netns run by den on
// the host, and returns once that is configured.
//
// pid is the sandbox's first process (bwrap's child-pid), in the
// sandbox's user and network namespaces with its id maps written. Its
// loopback must be up: bwrap sets it up only after --userns-block-fd is
// released, and Attach then has to run before bwrap starts the
// sandbox's first process, which Gate arranges. Its exit ends the
// networking.
//
// ctx bounds only the wait for slirp4netns to be ready; once Attach
// returns, slirp4netns runs until Close or until pid exits. On an error
// nothing Attach started is left running.
func Attach(ctx context.Context, pid int, o Options) (*Net, error) {
	path, err := slirpPath(o.Slirp)
	if err != nil {
		return nil, err
	}
	mtu := o.MTU
	if mtu == 0 {
		mtu = defaultMTU
	}
	if mtu < minMTU || mtu > maxMTU {
		return nil, fmt.Errorf("netns: MTU %d is outside %d-%d", o.MTU, minMTU, maxMTU)
	}
	// The pidfd pins pid: while it reports the process alive, the
	// number cannot have passed to another process, so the namespaces
	// slirp4netns joined by number are the sandbox's.
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd "+strconv.Itoa(pid))
	if err := notOwn(pid); err != nil {
		pidfd.Close()
		return nil, err
	}
	if err := loopbackUp(pid); err != nil {
		pidfd.Close()
		return nil, err
	}
	cred, note, err := runAs(pid)
	if err != nil {
		pidfd.Close()
		return nil, err
	}
	if note != "" {
		o.log(note)
	}
	h := hardening{sandbox: true, seccomp: true}
	for {
		n, out, err := start(ctx, path, pid, pidfd, cred, args(pid, mtu, h))
		switch {
		case err == nil:
			return n, nil
		case h.sandbox && strings.Contains(out, "create_sandbox failed"):
			h.sandbox = false
			o.log("netns: slirp4netns cannot create its sandbox here, running it without --enable-sandbox: " + oneLine(out))
		case h.seccomp && strings.Contains(out, "enable_seccomp failed"):
			h.seccomp = false
			o.log("netns: slirp4netns cannot enable seccomp here, running it without --enable-seccomp: " + oneLine(out))
		default:
			pidfd.Close()
			return nil, err
		}
	}
}

// args is slirp4netns's command line; fd 3 is the ready pipe, fd 4 the
// exit pipe. The computer gets IPv4 only (slirp4netns calls its IPv6
// experimental): IPv6 connections fail at once, and clients fall back.
func args(pid, mtu int, h hardening) []string {
	p := strconv.Itoa(pid)
	a := []string{"--configure", "--mtu=" + strconv.Itoa(mtu), "--disable-host-loopback"}
	if h.sandbox {
		a = append(a, "--enable-sandbox")
	}
	if h.seccomp {
		a = append(a, "--enable-seccomp")
	}
	// --netns-type=pid, not a path to a namespace fd den holds: with a
	// path, slirp4netns 1.2.0 forgets pid, and an unprivileged
	// --enable-sandbox then fails to re-enter the user namespace.
	return append(a, "--ready-fd=3", "--exit-fd=4",
		"--netns-type=pid", "--userns-path=/proc/"+p+"/ns/user", p, Interface)
}

// start runs slirp4netns once and waits until it is ready. On an error
// it returns what slirp4netns printed, and nothing it started runs on.
func start(ctx context.Context, path string, pid int, pidfd *os.File, cred *syscall.Credential, argv []string) (*Net, string, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, "", fmt.Errorf("netns: pipe: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, "", fmt.Errorf("netns: pipe: %w", err)
	}
	out := &tail{}
	cmd := exec.Command(path, argv...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stderr = out // its errors; stdout only has a banner
	cmd.ExtraFiles = []*os.File{readyW, exitR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	cmd.WaitDelay = time.Second
	// Pdeathsig fires when the thread that forked exits, not the
	// process: fork from den's launcher thread, which never exits.
	err = launch.Start(cmd)
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, "", fmt.Errorf("netns: start %s: %w", path, err)
	}
	n := &Net{cmd: cmd, out: out, pidfd: pidfd, exitW: exitW,
		watched: make(chan struct{}), exited: make(chan struct{})}
	go n.wait()
	if err := n.ready(ctx, readyR, pid); err != nil {
		n.stop()
		n.cmd.Process.Kill()
		<-n.exited
		return nil, out.String(), err
	}
	go n.watch()
	return n, "", nil
}

// ready waits for slirp4netns to write to its ready fd, which it does
// once the interface, address and route are in place and its own
// sandbox and seccomp filter are on.
func (n *Net) ready(ctx context.Context, r *os.File, pid int) error {
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var b [1]byte
	if _, err := r.Read(b[:]); err != nil {
		if ctx.Err() == nil {
			// The ready fd closed unwritten: slirp4netns is exiting.
			select {
			case <-n.exited:
				return n.failure(pid)
			case <-ctx.Done():
			}
		}
		return fmt.Errorf("netns: attach to pid %d: %w", pid, ctx.Err())
	}
	gone := true
	if rc, err := n.pidfd.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { gone = exited(int(fd)) })
	}
	if gone {
		return fmt.Errorf("netns: attach to pid %d: the process exited while slirp4netns started", pid)
	}
	return nil
}

// failure describes slirp4netns exiting before it was ready.
func (n *Net) failure(pid int) error {
	out := n.out.String()
	msg := oneLine(out)
	if strings.Contains(out, "/dev/net/tun") {
		uid := os.Geteuid()
		if c := n.cmd.SysProcAttr.Credential; c != nil {
			uid = int(c.Uid)
		}
		return fmt.Errorf("netns: %w: slirp4netns for pid %d (uid %d) cannot use /dev/net/tun: %s: load the tun module and make /dev/net/tun a 0666 character device (udev's default; chmod 0666 /dev/net/tun)",
			ErrUnavailable, pid, uid, msg)
	}
	return fmt.Errorf("netns: slirp4netns for pid %d exited before it was ready (%v): %s", pid, n.waitErr, msg)
}

func (n *Net) wait() {
	n.waitErr = n.cmd.Wait()
	close(n.exited)
}

// watch stops slirp4netns when the sandbox's process exits. It returns
// early when Close closes the pidfd.
func (n *Net) watch() {
	defer close(n.watched)
	rc, err := n.pidfd.SyscallConn()
	if err != nil {
		return
	}
	if err := rc.Read(func(fd uintptr) bool { return exited(int(fd)) }); err == nil {
		n.stop()
	}
}

// stop closes the exit fd's write end; slirp4netns sees the hang-up and
// exits.
func (n *Net) stop() {
	n.stopOnce.Do(func() { n.exitW.Close() })
}

// Pid is slirp4netns's process id on the host.
func (n *Net) Pid() int { return n.cmd.Process.Pid }

// Close stops slirp4netns and waits for it. Safe to call twice, and
// from several goroutines; every call returns the first one's result:
// nil when slirp4netns exited cleanly, whether Close or the sandbox's
// exit stopped it.
func (n *Net) Close() error {
	n.closeOnce.Do(func() {
		n.stop()
		n.pidfd.Close()
		<-n.watched
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-n.exited:
		case <-t.C:
			n.cmd.Process.Kill()
			<-n.exited
			n.closeErr = fmt.Errorf("netns: slirp4netns (pid %d) still ran %v after its exit fd closed; killed it", n.Pid(), stopGrace)
			return
		}
		if n.waitErr != nil {
			n.closeErr = fmt.Errorf("netns: slirp4netns (pid %d): %w: %s", n.Pid(), n.waitErr, oneLine(n.out.String()))
		}
	})
	return n.closeErr
}

// ResolvConf is the /etc/resolv.conf the computer must see: slirp4netns's
// DNS forwarder.
func ResolvConf() []byte {
	return []byte("nameserver " + Nameserver + "\n")
}

// exited reports whether the process behind pidfd has exited (a
// zombie counts).
func exited(pidfd int) bool {
	p := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	k, err := unix.Poll(p, 0)
	return err == nil && k > 0 && p[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}

// notOwn refuses a pid in den's own network namespace: slirp4netns
// would give the host a tap device and a second default route.
func notOwn(pid int) error {
	var self, other unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		return fmt.Errorf("netns: own network namespace: %w", err)
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &other); err != nil {
		return fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	if self.Dev == other.Dev && self.Ino == other.Ino {
		return fmt.Errorf("netns: attach to pid %d: it is in den's own network namespace, not a sandbox's", pid)
	}
	return nil
}

// loopbackUp refuses a namespace whose loopback bwrap has not set up
// yet (see Gate): slirp4netns would bring lo up, and bwrap's own setup
// would then fail.
func loopbackUp(pid int) error {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/fib_trie")
	if err != nil {
		return fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	if !strings.Contains(string(b), "127.0.0.1") {
		return fmt.Errorf("netns: attach to pid %d: its loopback is not up yet: attach after bwrap set it up (see Gate), or bwrap's own loopback setup fails", pid)
	}
	return nil
}

// runAs is who slirp4netns runs as: den itself (nil), except that den
// as root runs it as the owner of pid's user namespace when that is
// another user and /dev/net/tun lets it in. note explains a fallback to
// root.
func runAs(pid int) (cred *syscall.Credential, note string, err error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	owner, err := usernsOwner(pid)
	if err != nil {
		return nil, "", fmt.Errorf("netns: owner of pid %d's user namespace: %w", pid, err)
	}
	if owner == 0 {
		return nil, "", nil
	}
	gid, err := realGID(pid)
	if err != nil {
		return nil, "", fmt.Errorf("netns: gid of pid %d: %w", pid, err)
	}
	if ok, why := tunUsable(owner, gid); !ok {
		return nil, fmt.Sprintf("netns: slirp4netns runs as root, not as uid %d that owns the sandbox's user namespace: %s; chmod 0666 /dev/net/tun (udev's default) lets it run unprivileged", owner, why), nil
	}
	return &syscall.Credential{Uid: owner, Gid: gid, Groups: []uint32{}}, "", nil
}

func usernsOwner(pid int) (uint32, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return unix.IoctlGetUint32(int(f.Fd()), unix.NS_GET_OWNER_UID)
}

// realGID is pid's real gid as the host sees it.
func realGID(pid int) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Gid:" {
			g, err := strconv.ParseUint(f[1], 10, 32)
			return uint32(g), err
		}
	}
	return 0, fmt.Errorf("no Gid line in /proc/%d/status", pid)
}

// tunUsable reports whether uid and gid (with no other groups) may open
// /dev/net/tun for reading and writing, by its mode bits.
func tunUsable(uid, gid uint32) (bool, string) {
	var st unix.Stat_t
	if err := unix.Stat("/dev/net/tun", &st); err != nil {
		return false, "no /dev/net/tun: " + err.Error()
	}
	m := st.Mode
	switch {
	case m&unix.S_IFMT != unix.S_IFCHR:
		return false, "/dev/net/tun is not a character device"
	case m&0o006 == 0o006,
		st.Uid == uid && m&0o600 == 0o600,
		st.Gid == gid && m&0o060 == 0o060:
		return true, ""
	}
	return false, fmt.Sprintf("/dev/net/tun has mode %#o, owner %d:%d", m&0o777, st.Uid, st.Gid)
}

// tail keeps the last 4 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// oneLine joins what slirp4netns printed on stderr into one line for an
// error or a log, without the lines it prints on every run.
func oneLine(out string) string {
	var keep []string
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" || routine(line) {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) == 0 {
		return "no output"
	}
	return strings.Join(keep, "; ")
}

func routine(line string) bool {
	for _, p := range []string{"WARNING: Support for seccomp is experimental", "sent tapfd=", "received tapfd=",
		"do_slirp is exiting", "do_slirp failed", "parent failed", "child failed(", "exitfd event"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
