package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// What the computer sees.
const (
	// Interface is the computer's network interface.
	Interface = "den0"
	// Address is the computer's IPv4 address on Interface.
	Address = "10.0.2.100/24"
	// Gateway is the computer's IPv4 default route. Nothing answers
	// there: what goes to it is redirected to den like anything else.
	Gateway = "10.0.2.2"
	// Nameserver is the computer's resolver. Any address would do: every
	// DNS query reaches den, whatever server it names.
	Nameserver = "10.0.2.3"
	// Address6 and Gateway6 are the IPv6 counterparts, so that an IPv6
	// connection reaches den (and its policy) instead of failing on
	// its own.
	Address6 = "fd00:de::100/64"
	Gateway6 = "fd00:de::2"

	peer  = "den1" // the other end of the veth pair, also inside
	table = "den"  // the nf_tables table Attach installs
	mtu   = 65520  // large, as on a loopback: nothing ever crosses the veth
	dns   = 53     // the port whose UDP goes to den's resolver
	maxFD = 3      // the listeners Attach hands over
)

// Options for Attach.
type Options struct {
	// Self is the program an ordinary user's den runs as its helper in
	// the namespace (see MaybeHelper); "" is den's own executable.
	Self string
	// Nsenter is util-linux's nsenter; "" looks it up on PATH.
	Nsenter string
}

// Net is a sandbox's network namespace, set up by Attach: den's
// listeners inside it.
type Net struct {
	// TCP receives every TCP connection the computer makes to an
	// address outside its loopback: TCP[0] over IPv4, TCP[1] over
	// IPv6. OriginalDst tells where each was going.
	TCP []net.Listener
	// DNS receives every DNS query the computer sends over UDP and
	// IPv4, whatever server it names.
	DNS net.PacketConn

	once sync.Once
	err  error
}

// Close closes the listeners. Safe to call twice.
func (n *Net) Close() error {
	n.once.Do(func() {
		var errs []error
		for _, l := range n.TCP {
			errs = append(errs, l.Close())
		}
		if n.DNS != nil {
			errs = append(errs, n.DNS.Close())
		}
		n.err = errors.Join(errs...)
	})
	return n.err
}

// Attach sets up the network namespace of pid as the package doc says
// and returns den's listeners in it.
//
// pid is the sandbox's first process (bwrap's child-pid), in the
// sandbox's user and network namespaces with its id maps written. Its
// loopback must be up: bwrap sets it up only after --userns-block-fd is
// released, and Attach then has to run before bwrap starts the
// sandbox's first process, which Gate arranges. On an error nothing is
// left half done in den: the namespace dies with the sandbox.
func Attach(ctx context.Context, pid int, o Options) (*Net, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd "+strconv.Itoa(pid))
	defer pidfd.Close()
	if err := notOwn(pid); err != nil {
		return nil, err
	}
	if err := loopbackUp(pid); err != nil {
		return nil, err
	}
	// The pidfd pins pid: while it reports the process alive, the
	// namespaces opened by number below are the sandbox's.
	netNS, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	defer netNS.Close()
	var userNS *os.File
	if os.Geteuid() != 0 {
		if userNS, err = os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user"); err != nil {
			return nil, fmt.Errorf("netns: attach to pid %d: %w", pid, err)
		}
		defer userNS.Close()
	}
	if exited(pidfd) {
		return nil, fmt.Errorf("netns: attach to pid %d: the process exited", pid)
	}
	var files []*os.File
	if userNS == nil {
		files, err = onThread(netNS)
	} else {
		files, err = viaHelper(ctx, o, userNS, netNS)
	}
	if err != nil {
		return nil, fmt.Errorf("netns: attach to pid %d: %w", pid, err)
	}
	return fromFiles(files)
}

// onThread runs setup on an OS thread of den's that joins ns for it.
// den as root may: it holds CAP_SYS_ADMIN over every namespace.
func onThread(ns *os.File) ([]*os.File, error) {
	type result struct {
		files []*os.File
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("join its network namespace: %w", err)}
			return
		}
		files, err := setup()
		// Back to den's namespace; a thread that cannot go back stays
		// locked, and ends with the goroutine.
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{files, err}
	}()
	r := <-ch
	return r.files, r.err
}

// fromFiles turns the files setup returned (TCP over IPv4, over IPv6,
// DNS) into a Net, and closes them.
func fromFiles(files []*os.File) (*Net, error) {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(files) != maxFD {
		return nil, fmt.Errorf("netns: setup returned %d sockets, want %d", len(files), maxFD)
	}
	n := &Net{}
	for _, f := range files[:2] {
		l, err := net.FileListener(f)
		if err != nil {
			n.Close()
			return nil, fmt.Errorf("netns: listener: %w", err)
		}
		n.TCP = append(n.TCP, l)
	}
	pc, err := net.FilePacketConn(files[2])
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("netns: resolver socket: %w", err)
	}
	n.DNS = pc
	return n, nil
}

// exited reports whether the process behind pidfd has exited (a
// zombie counts).
func exited(pidfd *os.File) bool {
	p := []unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}
	k, err := unix.Poll(p, 0)
	return err == nil && k > 0 && p[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}

// notOwn refuses a pid in den's own network namespace: its rules would
// redirect the host's own traffic.
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
// yet (see Gate): den's listeners need it, and bringing it up first
// would make bwrap's own setup fail.
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

// ResolvConf is the /etc/resolv.conf the computer must see.
func ResolvConf() []byte {
	return []byte("nameserver " + Nameserver + "\n")
}
