package netns_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// The test network namespace stands in for the internet, which this
// machine does not have: a peer on an interface of its own, a DNS
// server on a loopback resolver address as systemd-resolved has, and
// listeners on its loopback that must stay out of reach.
const (
	peerIP     = "10.213.0.1"
	resolverIP = "127.0.0.53"
	testName   = "den-test.example"
	testIP     = "10.213.0.9"
	innerBound = 5 * time.Minute // a limit for a hang, not an expectation
)

// TestOutbound runs TestAttach, as root (den as root, with bwrap as a
// throwaway user), inside a network namespace the test owns: there the
// sandbox reaches the peer and resolves testName through slirp4netns's
// forwarder and the namespace's resolv.conf, while the namespace's own
// loopback stays unreachable. The listeners count from their side too.
func TestOutbound(t *testing.T) {
	ns := newTestNetns(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ns.runInner(t, self, nil)
}

// TestUnprivileged runs TestAttach as an ordinary user (den as an
// ordinary user: its sandbox maps it to root, and slirp4netns has to
// join the sandbox's user namespace), inside the test's network
// namespace.
func TestUnprivileged(t *testing.T) {
	u := sandboxtest.NewUser(t)
	ns := newTestNetns(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ns.runInner(t, u.Install(t, self, "netns.test"), u)
}

type testNetns struct {
	ip, name string
	peer     *listener
	loops    []*listener // on 127.0.0.1 and on the resolver's address
	dns      *dnsServer
}

// newTestNetns makes a network namespace with lo up and peerIP on an
// interface of its own, /etc/netns/NAME/resolv.conf naming resolverIP,
// and the servers; cleanup deletes them all.
func newTestNetns(t *testing.T) *testNetns {
	if os.Getuid() != 0 {
		t.Skipf("making a network namespace needs root (this is uid %d)", os.Getuid())
	}
	ns := &testNetns{ip: sandboxtest.Need(t, "ip", "iproute2"), name: "den-nettest-" + randomHex(4)}
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "slirp4netns", "slirp4netns")
	ns.cmd(t, "netns", "add", ns.name)
	t.Cleanup(func() {
		if out, err := exec.Command(ns.ip, "netns", "del", ns.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns.name, err, out)
		}
	})
	ns.cmd(t, "-n", ns.name, "link", "set", "lo", "up")
	// A dummy interface where the kernel has them, else a veth pair.
	if _, err := ns.try("-n", ns.name, "link", "add", "d0", "type", "dummy"); err != nil {
		ns.cmd(t, "-n", ns.name, "link", "add", "d0", "type", "veth", "peer", "name", "d1")
		ns.cmd(t, "-n", ns.name, "link", "set", "d1", "up")
	}
	ns.cmd(t, "-n", ns.name, "addr", "add", peerIP+"/24", "dev", "d0")
	ns.cmd(t, "-n", ns.name, "link", "set", "d0", "up")

	// `ip netns exec` binds this over /etc/resolv.conf for what it runs.
	_, err := os.Stat("/etc/netns")
	made := errors.Is(err, os.ErrNotExist)
	dir := filepath.Join("/etc/netns", ns.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		if made {
			os.Remove("/etc/netns")
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver "+resolverIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var peer, loop, resolverLoop net.Listener
	var dns net.PacketConn
	ns.in(t, func() (err error) {
		if peer, err = net.Listen("tcp", peerIP+":0"); err != nil {
			return err
		}
		if loop, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		if resolverLoop, err = net.Listen("tcp", resolverIP+":0"); err != nil {
			return err
		}
		dns, err = net.ListenPacket("udp", resolverIP+":53")
		return err
	})
	ns.peer = serve(t, peer)
	ns.loops = []*listener{serve(t, loop), serve(t, resolverLoop)}
	ns.dns = serveDNS(t, dns)
	return ns
}

func (ns *testNetns) try(args ...string) (string, error) {
	out, err := exec.Command(ns.ip, args...).CombinedOutput()
	return string(out), err
}

func (ns *testNetns) cmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := ns.try(args...); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// in runs f on a thread that joined the namespace; sockets f opens
// stay in it. The thread is never unlocked, so it ends with its
// goroutine and no other goroutine ever runs in the namespace.
func (ns *testNetns) in(t *testing.T, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	if err := <-errc; err != nil {
		t.Fatalf("in %s: %v", ns.name, err)
	}
}

// runInner runs TestAttach from bin under `ip netns exec`, as u when u
// is not nil, and checks its result and what the servers saw.
func (ns *testNetns) runInner(t *testing.T, bin string, u *sandboxtest.User) {
	ctx, cancel := context.WithTimeout(context.Background(), innerBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, ns.ip, "netns", "exec", ns.name, bin)
	var loops []string
	for _, l := range ns.loops {
		loops = append(loops, l.ln.Addr().String()+"="+l.token)
	}
	cmd.Env = append(os.Environ(),
		roleEnv+"=prep", tunEnv+"=1",
		peerEnv+"="+ns.peer.ln.Addr().String()+"="+ns.peer.token,
		dnsEnv+"="+testName+"="+testIP,
		loopsEnv+"="+strings.Join(loops, ","))
	if u != nil {
		cmd.Env = append(cmd.Env, userEnv+"="+formatUser(u))
	}
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	out := string(b)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("TestAttach in %s: still running after %v, killed\n%s", ns.name, innerBound, out)
	case err != nil:
		t.Fatalf("TestAttach in %s: %v\n%s", ns.name, err, out)
	case strings.Contains(out, "--- SKIP"):
		t.Fatalf("TestAttach in %s skipped tests:\n%s", ns.name, out)
	}
	for _, want := range []string{"--- PASS: TestAttach ", "--- PASS: TestAttach/outbound_", "--- PASS: TestAttach/dns_" + testName} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output of TestAttach in %s:\n%s", want, ns.name, out)
		}
	}
	if n := ns.peer.accepted.Load(); n < 1 {
		t.Errorf("the peer accepted %d connections, want at least 1", n)
	}
	if n := ns.dns.asked.Load(); n < 1 {
		t.Errorf("the DNS server was asked for %s %d times, want at least 1", testName, n)
	}
	for _, l := range ns.loops {
		if n := l.accepted.Load(); n != 0 {
			t.Errorf("the loopback listener %s accepted %d connections", l.ln.Addr(), n)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("TestAttach in %s:\n%s", ns.name, out)
	}
}

// dnsServer answers A queries for testName with testIP, and everything
// else with no answers.
type dnsServer struct {
	asked atomic.Int64 // queries for testName
}

func serveDNS(t *testing.T, c net.PacketConn) *dnsServer {
	s := &dnsServer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			k, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := s.answer(buf[:k]); ok {
				c.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return s
}

func (s *dnsServer) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	b.EnableCompression()
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	if strings.EqualFold(q.Name.String(), testName+".") {
		s.asked.Add(1)
		if q.Type == dnsmessage.TypeA {
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60},
				dnsmessage.AResource{A: [4]byte(net.ParseIP(testIP).To4())})
		}
	}
	resp, err := b.Finish()
	return resp, err == nil
}
