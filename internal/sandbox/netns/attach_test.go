package netns_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// probe is one connection attempt from inside a sandbox.
type probe struct {
	name  string
	argv  []string
	env   []string
	reach bool   // it must connect (and print token), or must not
	token string // the reply only a real connection gets
}

// TestAttach checks what a sandbox with the network on can reach, in
// the network namespace the test runs in: its interface is configured;
// the loopback of that namespace (127.0.0.0/8, directly, through the
// gateway 10.0.2.2 and through the nameserver 10.0.2.3 on a port other
// than 53) and its abstract unix sockets are unreachable, over TCP and
// UDP, as seen both from the client and from the listeners; slirp4netns
// runs with the least privilege and its own confinement. Run under `ip
// netns exec` by TestOutbound and TestUnprivileged, it also checks that
// a peer outside is reachable and that names resolve (see inner).
//
// As root, bwrap runs as a throwaway user, as den as root does; as an
// ordinary user, as that user.
func TestAttach(t *testing.T) {
	e := newEnv(t)

	tcp := listen(t, "tcp", "127.0.0.1:0")
	udp := listenUDP(t, "127.0.0.1:0")
	abstract := "@den-test-" + randomHex(8)
	abs := listen(t, "unix", abstract)
	// The helper does reach the socket from the host: when it fails in
	// the sandbox, it fails for the namespace.
	if out, err := e.hostDial(t, abstract); err != nil || !strings.Contains(out, abs.token) {
		t.Fatalf("the dial helper cannot reach %s from the host: %v: %s", abstract, err, out)
	}

	t.Run("interface", func(t *testing.T) {
		out, err := e.run(t, nil, e.busybox, "sh", "-c",
			"busybox ip -4 addr show dev tap0 && busybox ip link show dev tap0 && busybox ip route && cat /etc/resolv.conf")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, want := range []string{"inet " + netns.Address, "mtu 65520", "default via " + netns.Gateway, "nameserver " + netns.Nameserver} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})

	t.Run("confinement", func(t *testing.T) { e.checkConfinement(t) })

	nc := func(host, port string) []string { return []string{e.busybox, "nc", "-w", "3", host, port} }
	dialEnv := []string{"DEN_NETNS_TEST_ROLE=dial"}
	probes := []probe{
		{name: "tcp loopback", argv: nc("127.0.0.1", tcp.port()), token: tcp.token},
		{name: "tcp gateway to loopback", argv: nc(netns.Gateway, tcp.port()), token: tcp.token},
		{name: "tcp nameserver to loopback", argv: nc(netns.Nameserver, tcp.port()), token: tcp.token},
		{name: "udp gateway to loopback", argv: []string{e.helper, "udp:" + netns.Gateway + ":" + udp.port()}, env: dialEnv},
		{name: "udp nameserver to loopback", argv: []string{e.helper, "udp:" + netns.Nameserver + ":" + udp.port()}, env: dialEnv},
		{name: "abstract unix socket", argv: []string{e.helper, abstract}, env: dialEnv, token: abs.token},
	}
	probes = append(probes, inner(t, e)...)
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			// The marker tells a refused connection from a sandbox that
			// never ran.
			argv := append([]string{e.busybox, "sh", "-c", `echo den-probe-ran; exec "$@"`, "sh"}, p.argv...)
			out, err := e.run(t, p.env, argv...)
			switch {
			case !strings.Contains(out, "den-probe-ran"):
				t.Fatalf("the sandbox did not run the probe: %v: %s", err, out)
			case p.reach && (err != nil || !strings.Contains(out, p.token)):
				t.Errorf("%s: want a connection, got %v: %s", strings.Join(p.argv, " "), err, out)
			case !p.reach && p.token != "" && (err == nil || strings.Contains(out, p.token)):
				t.Errorf("%s: connected, want it refused: %s", strings.Join(p.argv, " "), out)
			default:
				t.Logf("%s: %v: %s", strings.Join(p.argv, " "), err, strings.TrimSpace(out))
			}
		})
	}
	if n := tcp.accepted.Load(); n != 0 {
		t.Errorf("the loopback TCP listener accepted %d connections from sandboxes", n)
	}
	if n := udp.got.Load(); n != 0 {
		t.Errorf("the loopback UDP socket received %d datagrams from sandboxes", n)
	}
	if n := abs.accepted.Load() - 1; n != 0 { // one was the host's own dial
		t.Errorf("the abstract socket accepted %d connections from sandboxes", n)
	}
}

// inner returns the probes TestOutbound and TestUnprivileged ask for
// through the environment: loopback listeners they run in the test
// network namespace (unreachable), a peer on another interface there
// (reachable) and a name their DNS server answers (resolvable).
func inner(t *testing.T, e *env) []probe {
	var ps []probe
	nc := func(host, port string) []string { return []string{e.busybox, "nc", "-w", "3", host, port} }
	if v := os.Getenv(loopsEnv); v != "" {
		for _, spec := range strings.Split(v, ",") {
			addr, token, _ := strings.Cut(spec, "=")
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("%s: %v", loopsEnv, err)
			}
			ps = append(ps,
				probe{name: "netns loopback " + addr, argv: nc(host, port), token: token},
				probe{name: "netns loopback " + addr + " via gateway", argv: nc(netns.Gateway, port), token: token},
				probe{name: "netns loopback " + addr + " via nameserver", argv: nc(netns.Nameserver, port), token: token})
		}
	}
	if v := os.Getenv(peerEnv); v != "" {
		addr, token, _ := strings.Cut(v, "=")
		host, port, _ := net.SplitHostPort(addr)
		ps = append(ps, probe{name: "outbound " + addr, argv: nc(host, port), reach: true, token: token})
	}
	if v := os.Getenv(dnsEnv); v != "" {
		name, ip, _ := strings.Cut(v, "=")
		ps = append(ps, probe{name: "dns " + name, argv: []string{e.busybox, "nslookup", name}, reach: true, token: ip})
	}
	return ps
}

// hostDial runs the dial helper on the host as the sandbox's user.
func (e *env) hostDial(t *testing.T, addr string) (string, error) {
	var cmd *exec.Cmd
	if e.user != nil {
		cmd = e.user.Command(context.Background(), e.helper, addr)
	} else {
		cmd = exec.Command(e.helper, addr)
	}
	cmd.Env = append(cmd.Env, "DEN_NETNS_TEST_ROLE=dial")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkConfinement checks who slirp4netns runs as and that its own
// sandbox and seccomp filter are on.
func (e *env) checkConfinement(t *testing.T) {
	b := e.startBox(t, true, nil, e.busybox, "true")
	n, err := b.attach(t, context.Background(), e.options(t))
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer n.Close()
	defer b.wait(t)
	pid := n.Pid()

	want, why := os.Geteuid(), "den's own uid"
	var st unix.Stat_t
	if os.Geteuid() == 0 && unix.Stat("/dev/net/tun", &st) == nil {
		if st.Mode&0o006 == 0o006 {
			want, why = e.user.UID, "the owner of the sandbox's user namespace"
		} else {
			want, why = 0, "root, since /dev/net/tun is closed to the sandbox's user"
			if !logHas(e.logged(), "runs as root") {
				t.Errorf("slirp4netns runs as root and nothing was logged: %q", e.logged())
			}
		}
	}
	if uid := status(t, pid, "Uid"); uid[0] != strconv.Itoa(want) || uid[1] != strconv.Itoa(want) {
		t.Errorf("slirp4netns runs as uid %v, want %d (%s)", uid, want, why)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	t.Logf("slirp4netns runs as uid %d (%s): %s", want, why, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	if logHas(e.logged(), "without --enable-") {
		t.Logf("slirp4netns runs without part of its confinement here: %q", e.logged())
		return
	}
	for _, flag := range []string{"--disable-host-loopback", "--enable-sandbox", "--enable-seccomp"} {
		if !strings.Contains(string(cmdline), flag+"\x00") {
			t.Errorf("slirp4netns runs without %s", flag)
		}
	}
	if s := status(t, pid, "Seccomp"); s[0] != "2" {
		t.Errorf("slirp4netns Seccomp: %v, want 2 (filter)", s)
	}
	if s := status(t, pid, "NoNewPrivs"); s[0] != "1" {
		t.Errorf("slirp4netns NoNewPrivs: %v, want 1", s)
	}
	// Its sandbox keeps CAP_NET_BIND_SERVICE only.
	if s := status(t, pid, "CapEff"); s[0] != "0000000000000400" {
		t.Errorf("slirp4netns CapEff: %v, want 0000000000000400", s)
	}
	self, _ := os.Readlink("/proc/self/ns/mnt")
	if mnt, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt"); err != nil || mnt == self {
		t.Errorf("slirp4netns mount namespace %q (%v), want one of its own, not %q", mnt, err, self)
	}
	if want != 0 {
		// Unprivileged, it sits in the sandbox's user namespace, where
		// its capabilities mean nothing on the host.
		sandboxNS, _ := os.Readlink("/proc/" + strconv.Itoa(b.pid) + "/ns/user")
		if ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user"); ns != sandboxNS {
			t.Errorf("slirp4netns user namespace %s, want the sandbox's %s", ns, sandboxNS)
		}
	}
}

func logHas(logs []string, s string) bool {
	for _, l := range logs {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// TestAttachErrors checks that Attach fails with an error, and leaves
// no slirp4netns behind, for a pid that does not exist, for den's own
// network namespace, for a sandbox whose loopback bwrap has not set up
// yet (still on --userns-block-fd), for a cancelled context, for a
// missing binary and for a bad MTU.
func TestAttachErrors(t *testing.T) {
	e := newEnv(t)
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	b := e.startBox(t, true, nil, e.busybox, "true")
	b.toGate(t)
	early := e.startBox(t, true, nil, e.busybox, "true") // still on --userns-block-fd
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		pid  int
		o    netns.Options
		want string
		is   error
	}{
		{name: "no such process", pid: done.Process.Pid, want: "no such process"},
		{name: "own namespace", pid: os.Getpid(), want: "den's own network namespace"},
		{name: "loopback not up", pid: early.pid, want: "loopback is not up yet"},
		{name: "cancelled", ctx: cancelled, pid: b.pid, is: context.Canceled},
		{name: "missing binary", pid: b.pid, o: netns.Options{Slirp: "/nonexistent/slirp4netns"}, want: "apt-get install slirp4netns", is: netns.ErrUnavailable},
		{name: "bad MTU", pid: b.pid, o: netns.Options{MTU: 70000}, want: "MTU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			n, err := netns.Attach(ctx, tt.pid, tt.o)
			if err == nil {
				n.Close()
				t.Fatal("attached")
			}
			if !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("error %q, want one saying %q (is %v)", err, tt.want, tt.is)
			}
			if left := slirpsFor(tt.pid); len(left) > 0 {
				t.Errorf("slirp4netns left running: %v", left)
			}
		})
	}
	t.Run("not on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := netns.Attach(context.Background(), b.pid, netns.Options{})
		if !errors.Is(err, netns.ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install slirp4netns") {
			t.Errorf("error %v, want ErrUnavailable naming the package", err)
		}
	})
}

// TestAttachTwice checks that a second Attach to the same sandbox fails
// cleanly, with slirp4netns's reason, and leaves the first working.
func TestAttachTwice(t *testing.T) {
	e := newEnv(t)
	b := e.startBox(t, true, nil, e.busybox, "ip", "-4", "addr", "show", "dev", "tap0")
	first, err := b.attach(t, context.Background(), e.options(t))
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer first.Close()
	second, err := netns.Attach(context.Background(), b.pid, e.options(t))
	if err == nil {
		second.Close()
		t.Fatal("attached twice")
	}
	t.Logf("second attach: %v", err)
	if !strings.Contains(err.Error(), "TUNSETIFF") {
		t.Errorf("error %q does not give slirp4netns's reason", err)
	}
	if left := slirpsFor(b.pid); len(left) != 1 || left[0] != first.Pid() {
		t.Errorf("slirp4netns processes for the sandbox: %v, want only %d", left, first.Pid())
	}
	if out, err := b.wait(t); err != nil || !strings.Contains(out, "inet "+netns.Address) {
		t.Errorf("after the failed second attach the sandbox has: %v: %s", err, out)
	}
}

// TestClose checks that Close detaches the network from a sandbox that
// still runs (its interface is gone), returns nil twice, and that Close
// after the sandbox died returns nil (run checks that for every probe).
func TestClose(t *testing.T) {
	e := newEnv(t)
	b := e.startBox(t, true, nil, e.busybox, "ip", "link", "show", "dev", "tap0")
	n, err := b.attach(t, context.Background(), e.options(t))
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	for i := range 2 {
		if err := closeWithin(t, n, 10*time.Second); err != nil {
			t.Errorf("close %d: %v", i+1, err)
		}
	}
	if !gone(n.Pid(), 1) {
		t.Errorf("slirp4netns (pid %d) runs after Close", n.Pid())
	}
	if out, err := b.wait(t); err == nil {
		t.Errorf("tap0 is still there after Close: %s", out)
	}
}

// TestNoOrphan checks that slirp4netns does not outlive den: a helper
// process attaches as den would and is killed with SIGKILL.
func TestNoOrphan(t *testing.T) {
	e := newEnv(t)
	b := e.startBox(t, true, nil, e.busybox, "true")
	b.toGate(t)
	den, slirp, _ := startHold(t, b.pid, "")
	den.Process.Signal(syscall.SIGKILL)
	den.Wait()
	if !gone(slirp, 200) {
		unix.Kill(slirp, unix.SIGKILL)
		t.Fatalf("slirp4netns (pid %d) outlived the process that started it", slirp)
	}
}

// TestHardeningFallback checks that on a host that refuses what
// slirp4netns's own sandbox or seccomp filter need, Attach still works
// without that one, says so in the log, and keeps the other.
func TestHardeningFallback(t *testing.T) {
	e := newEnv(t)
	tests := []struct{ deny, dropped, kept string }{
		{deny: "unshare", dropped: "--enable-sandbox", kept: "--enable-seccomp"},
		{deny: "seccomp", dropped: "--enable-seccomp", kept: "--enable-sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.deny, func(t *testing.T) {
			b := e.startBox(t, true, nil, e.busybox, "ip", "-4", "addr", "show", "dev", "tap0")
			b.toGate(t)
			den, slirp, logs := startHold(t, b.pid, tt.deny)
			t.Logf("logged: %q", logs)
			defer den.Wait()
			defer den.Process.Kill()
			if !logHas(logs, "without "+tt.dropped) {
				t.Errorf("nothing logged about running without %s: %q", tt.dropped, logs)
			}
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(slirp) + "/cmdline")
			if strings.Contains(string(cmdline), tt.dropped+"\x00") || !strings.Contains(string(cmdline), tt.kept+"\x00") {
				t.Errorf("slirp4netns runs as %q, want without %s and with %s", strings.ReplaceAll(string(cmdline), "\x00", " "), tt.dropped, tt.kept)
			}
			if out, err := b.wait(t); err != nil || !strings.Contains(out, "inet "+netns.Address) {
				t.Errorf("the sandbox has: %v: %s", err, out)
			}
		})
	}
}

// startHold runs the hold helper (den's stand-in) for pid, denying a
// syscall when deny is set, and returns it, slirp4netns's pid and what
// Attach logged. Cleanup kills it.
func startHold(t *testing.T, pid int, deny string) (*exec.Cmd, int, []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	den := exec.Command(self)
	den.Env = append(os.Environ(), roleEnv+"=hold", pidEnv+"="+strconv.Itoa(pid), denyEnv+"="+deny)
	stdin, err := den.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	stdout, err := den.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	den.Stderr = os.Stderr
	if err := den.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		den.Process.Kill()
		den.Wait()
	})
	var logs []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if l, ok := strings.CutPrefix(line, "log: "); ok {
			logs = append(logs, l)
			continue
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "slirp4netns" {
			if slirp, err := strconv.Atoi(f[1]); err == nil {
				return den, slirp, logs
			}
		}
		t.Fatalf("the hold helper said %q", line)
	}
	t.Fatalf("the hold helper ended without attaching: %v (logged %q)", sc.Err(), logs)
	return nil, 0, nil
}

// TestCheck checks den doctor's report: ok here with the version, and
// not ok, naming the package, without slirp4netns on PATH.
func TestCheck(t *testing.T) {
	sandboxtest.Need(t, "slirp4netns", "slirp4netns")
	ok, detail, fix := netns.Check()
	t.Logf("ok=%v detail=%q fix=%q", ok, detail, fix)
	v, _, err := netns.Version(mustLook(t, "slirp4netns"))
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !strings.Contains(detail, v) {
		t.Errorf("Check: %v %q %q, want ok naming version %s", ok, detail, fix, v)
	}
	t.Setenv("PATH", t.TempDir())
	ok, detail, fix = netns.Check()
	if ok || !strings.Contains(fix, "apt-get install slirp4netns") {
		t.Errorf("Check without slirp4netns: %v %q %q", ok, detail, fix)
	}
}

func mustLook(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
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
