package netns_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// The test binary also runs as a helper, chosen by roleEnv:
//
//   - dial: a client inside a sandbox (busybox nc cannot do abstract
//     unix sockets): dial the address in its one argument.
//   - prep: the root side of a run under `ip netns exec`: give the
//     namespace a usable /dev/net/tun, then run TestAttach, as the
//     throwaway user when userEnv names one.
//   - hold: stand-in for den: attach to pidEnv's sandbox, print what
//     Attach logs and slirp4netns's pid, and wait to be killed.
const (
	roleEnv = "DEN_NETNS_TEST_ROLE"
	pidEnv  = "DEN_NETNS_TEST_PID"
	userEnv = "DEN_NETNS_TEST_USER" // name:uid:gid:dir:home:tmp
	tunEnv  = "DEN_NETNS_TEST_TUN"  // "1": mount a 0666 /dev/net/tun first
	denyEnv = "DEN_NETNS_TEST_DENY" // hold: "unshare" or "seccomp", see deny

	// Set by TestOutbound and TestUnprivileged for TestAttach under
	// `ip netns exec`; see inner.
	peerEnv  = "DEN_NETNS_TEST_PEER"  // addr=token: must be reachable
	dnsEnv   = "DEN_NETNS_TEST_DNS"   // name=ip: must resolve
	loopsEnv = "DEN_NETNS_TEST_LOOPS" // addr=token,...: loopback, unreachable
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "dial":
		os.Exit(dial(os.Args[len(os.Args)-1]))
	case "prep":
		os.Exit(prep())
	case "hold":
		os.Exit(hold())
	}
	os.Exit(m.Run())
}

// dial connects to addr: "@name" is an abstract unix socket,
// "udp:host:port" sends one datagram, anything else is TCP. It prints
// what it got and exits 0 when it connected.
func dial(addr string) int {
	network := "tcp"
	switch {
	case strings.HasPrefix(addr, "@"):
		network = "unix"
	case strings.HasPrefix(addr, "udp:"):
		network, addr = "udp", strings.TrimPrefix(addr, "udp:")
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	defer c.Close()
	if network == "udp" {
		_, err := c.Write([]byte("den-test datagram"))
		fmt.Println("sent:", err)
		return 0
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Println("connected:", strings.TrimSpace(line))
	return 0
}

// prep runs as root in the mount namespace `ip netns exec` made. This
// machine's /dev/net/tun may be 0600 (no udev), which only root can
// open; with tunEnv it mounts a 0666 one over it in this mount
// namespace only, as udev would, so that slirp4netns can run as an
// ordinary user. Then it runs TestAttach.
func prep() int {
	if os.Getenv(tunEnv) == "1" {
		if err := unix.Mount("tmpfs", "/dev/net", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
			fmt.Fprintln(os.Stderr, "prep: mount /dev/net:", err)
			return 2
		}
		if err := unix.Mknod("/dev/net/tun", unix.S_IFCHR|0o666, int(unix.Mkdev(10, 200))); err != nil {
			fmt.Fprintln(os.Stderr, "prep: mknod /dev/net/tun:", err)
			return 2
		}
		if err := os.Chmod("/dev/net/tun", 0o666); err != nil {
			fmt.Fprintln(os.Stderr, "prep:", err)
			return 2
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "prep:", err)
		return 2
	}
	args := []string{"-test.run=^TestAttach$", "-test.v", "-test.count=1"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	pass := []string{peerEnv, dnsEnv, loopsEnv}
	if spec := os.Getenv(userEnv); spec != "" {
		u, err := parseUser(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, "prep:", err)
			return 2
		}
		cmd = u.Command(ctx, self, args...)
		for _, k := range pass {
			cmd.Env = append(cmd.Env, k+"="+os.Getenv(k))
		}
	} else {
		cmd = exec.CommandContext(ctx, self, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, roleEnv+"=") && !strings.HasPrefix(kv, tunEnv+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "prep: TestAttach:", err)
		return 1
	}
	return 0
}

func formatUser(u *sandboxtest.User) string {
	return strings.Join([]string{u.Name, strconv.Itoa(u.UID), strconv.Itoa(u.GID), u.Dir, u.Home, u.Tmp}, ":")
}

func parseUser(s string) (*sandboxtest.User, error) {
	f := strings.Split(s, ":")
	if len(f) != 6 {
		return nil, fmt.Errorf("bad %s %q", userEnv, s)
	}
	uid, err1 := strconv.Atoi(f[1])
	gid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("bad %s %q", userEnv, s)
	}
	return &sandboxtest.User{Name: f[0], UID: uid, GID: gid, Dir: f[3], Home: f[4], Tmp: f[5]}, nil
}

// hold attaches to the sandbox pidEnv names as den would, prints
// "log: LINE" for what Attach logs, then "slirp4netns PID", and waits
// until it is killed (or its stdin closes).
func hold() int {
	pid, err := strconv.Atoi(os.Getenv(pidEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold:", err)
		return 2
	}
	if d := os.Getenv(denyEnv); d != "" {
		if err := deny(d); err != nil {
			fmt.Fprintln(os.Stderr, "hold: deny", d+":", err)
			return 2
		}
	}
	o := netns.Options{Log: func(s string) { fmt.Println("log:", s) }}
	n, err := netns.Attach(context.Background(), pid, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold:", err)
		return 1
	}
	fmt.Printf("slirp4netns %d\n", n.Pid())
	io.Copy(io.Discard, os.Stdin) // the test holds stdin open
	return 0
}

// deny makes this process and what it starts fail a syscall with
// EPERM, as a host that forbids it would: "unshare" breaks
// slirp4netns's --enable-sandbox, "seccomp" (seccomp(2) and
// prctl(PR_SET_SECCOMP)) its --enable-seccomp.
func deny(what string) error {
	errno := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	var prog []bpf.Instruction
	switch what {
	case "unshare":
		prog = []bpf.Instruction{
			bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_UNSHARE, SkipFalse: 1},
			errno,
			allow,
		}
	case "seccomp":
		prog = []bpf.Instruction{
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SECCOMP, SkipFalse: 1},
			errno,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_PRCTL, SkipFalse: 3},
			bpf.LoadAbsolute{Off: 16, Size: 4}, // the low half of args[0]
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PR_SET_SECCOMP, SkipFalse: 1},
			errno,
			allow,
		}
	default:
		return fmt.Errorf("nothing to deny called %q", what)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}
