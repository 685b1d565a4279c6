package netns_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// serve answers what Attach's listeners get, as den's egress would: a
// TCP connection with the address it was going to, a DNS datagram with
// "dns".
func serve(t testing.TB, n *netns.Net) {
	for _, l := range n.TCP {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				dst, err := netns.OriginalDst(c)
				if err != nil {
					c.Write([]byte("no-original-dst " + err.Error() + "\n"))
				} else if dst.String() == c.LocalAddr().String() {
					c.Write([]byte("listener-itself\n"))
				} else {
					c.Write([]byte("to=" + dst.String() + "\n"))
				}
				c.Close()
			}
		}()
	}
	go func() {
		b := make([]byte, 512)
		for {
			_, from, err := n.DNS.ReadFrom(b)
			if err != nil {
				return
			}
			n.DNS.WriteTo([]byte("dns"), from)
		}
	}()
}

// TestAttach: in a sandbox set up by Attach, every TCP connection (IPv4
// or IPv6, to any address) and every DNS datagram over IPv4 arrives at
// den's listeners, which know where each was going; other UDP is
// refused at once, and the sandbox's own loopback works as before. As
// root, bwrap runs as a throwaway user, as den as root does, and den
// joins the namespace from a thread; as an ordinary user, den's helper
// does it (TestUnprivileged runs this test so).
func TestAttach(t *testing.T) {
	e := newEnv(t)
	dialEnv := []string{roleEnv + "=dial"}
	b := e.startBox(t, true, dialEnv, e.helper,
		"tcp:192.0.2.1:80", "tcp:[2001:db8::1]:443", "tcp:"+netns.Gateway+":22", "udp:192.0.2.53:53", "udp:"+netns.Nameserver+":53",
		"udp:192.0.2.1:9999", "udp:[2001:db8::53]:53", "self")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.toGate(t)
	n, err := netns.Attach(ctx, b.pid, netns.Options{})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer n.Close()
	serve(t, n)
	out, err := b.wait(t)
	if err != nil {
		t.Fatalf("sandbox: %v: %s", err, out)
	}
	want := map[string]string{
		"tcp:192.0.2.1:80":                "ok to=192.0.2.1:80",
		"tcp:[2001:db8::1]:443":           "ok to=[2001:db8::1]:443",
		"tcp:" + netns.Gateway + ":22":    "ok to=" + netns.Gateway + ":22",
		"udp:192.0.2.53:53":               "ok dns",
		"udp:" + netns.Nameserver + ":53": "ok dns",
		"udp:192.0.2.1:9999":              "operation not permitted",
		"udp:[2001:db8::53]:53":           "operation not permitted",
		"self":                            "ok self",
	}
	for line := range strings.Lines(out) {
		addr, got, _ := strings.Cut(strings.TrimSpace(line), " ")
		w, ok := want[addr]
		if !ok {
			continue
		}
		delete(want, addr)
		if !strings.Contains(got, w) {
			t.Errorf("%s: got %q, want %q", addr, got, w)
		}
	}
	for addr := range want {
		t.Errorf("no result for %s in:\n%s", addr, out)
	}
}

// TestInterface: the sandbox sees den0 with its addresses, the default
// routes and the resolver.
func TestInterface(t *testing.T) {
	e := newEnv(t)
	b := e.startBox(t, true, nil, e.busybox, "sh", "-c", "busybox ip addr show dev "+netns.Interface+" && busybox ip route && busybox ip -6 route && cat /etc/resolv.conf")
	b.toGate(t)
	n, err := netns.Attach(context.Background(), b.pid, netns.Options{})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer n.Close()
	out, err := b.wait(t)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"inet " + netns.Address, "inet6 " + netns.Address6, "default via " + netns.Gateway, "default via " + netns.Gateway6, "nameserver " + netns.Nameserver} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestAttachErrors: Attach refuses a pid that does not exist, den's own
// network namespace and a sandbox whose loopback bwrap has not set up
// yet; a second Attach to one sandbox fails and leaves the first
// working.
func TestAttachErrors(t *testing.T) {
	e := newEnv(t)
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	early := e.startBox(t, true, nil, e.busybox, "true") // still on --userns-block-fd
	for _, tt := range []struct {
		name string
		pid  int
		want string
	}{
		{"no such process", done.Process.Pid, "no such process"},
		{"own namespace", os.Getpid(), "den's own network namespace"},
		{"loopback not up", early.pid, "loopback is not up yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := netns.Attach(context.Background(), tt.pid, netns.Options{})
			if err == nil {
				n.Close()
				t.Fatal("attached")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want one saying %q", err, tt.want)
			}
		})
	}
	t.Run("twice", func(t *testing.T) {
		b := e.startBox(t, true, []string{roleEnv + "=dial"}, e.helper, "tcp:192.0.2.1:80")
		b.toGate(t)
		first, err := netns.Attach(context.Background(), b.pid, netns.Options{})
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
		defer first.Close()
		serve(t, first)
		second, err := netns.Attach(context.Background(), b.pid, netns.Options{})
		if err == nil {
			second.Close()
			t.Fatal("attached twice")
		}
		t.Logf("second attach: %v", err)
		if out, err := b.wait(t); err != nil || !strings.Contains(out, "ok to=192.0.2.1:80") {
			t.Errorf("after the failed second attach the sandbox got: %v: %s", err, out)
		}
	})
}

// TestCheck: den doctor's check passes on this machine.
func TestCheck(t *testing.T) {
	if ok, detail, fix := netns.Check(); !ok {
		t.Errorf("Check: %s (%s)", detail, fix)
	}
}

// TestUnprivileged runs TestAttach as an ordinary user: den then joins
// the sandbox's namespaces through nsenter and its helper.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already an ordinary user: TestAttach runs as one")
	}
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	u := sandboxtest.NewUser(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := u.Install(t, self, "netns.test")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := u.Command(ctx, bin, "-test.run=^(TestAttach|TestInterface)$", "-test.v", "-test.count=1").CombinedOutput()
	t.Logf("as %s:\n%s", u.Name, out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAttach") || strings.Contains(string(out), "SKIP") {
		t.Errorf("TestAttach as %s: %v\n%s", u.Name, err, out)
	}
}

// TestGate checks the gate's failures: bwrap dying before it reads
// /etc/resolv.conf ends Wait with an error, and so does ctx. (Every
// sandbox the other tests start goes through a gate that opens.)
func TestGate(t *testing.T) {
	bwrap := sandboxtest.Need(t, "bwrap", "bubblewrap")
	t.Run("bwrap fails first", func(t *testing.T) {
		g, err := netns.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		defer g.Open()
		cmd := exec.Command(bwrap, "--unshare-user", "--unshare-net", "--ro-bind", "/", "/",
			"--ro-bind", "/nonexistent-den-"+randomHex(4), "/mnt", "--ro-bind-data", "3", "/etc/resolv.conf", "true")
		cmd.ExtraFiles = []*os.File{g.File()}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		g.File().Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = g.Wait(ctx)
		cmd.Wait()
		if err == nil || !strings.Contains(err.Error(), "exited before it read") {
			t.Errorf("Wait: %v, want an error saying the sandbox exited", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		g, err := netns.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		defer g.File().Close()
		defer g.Open()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait: %v, want context.Canceled", err)
		}
	})
}
