package netns_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// env is what a test needs to start sandboxes the way den does.
type env struct {
	bwrap, busybox string
	// user runs bwrap when the test is root, as den as root does: the
	// sandbox's user namespace is then owned by an ordinary uid. nil:
	// bwrap runs as the test's own user.
	user   *sandboxtest.User
	helper string // this test binary, where the sandbox's user can run it
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{
		bwrap:   sandboxtest.Need(t, "bwrap", "bubblewrap"),
		busybox: sandboxtest.Need(t, "busybox", "busybox-static"),
	}
	sandboxtest.Need(t, "nsenter", "util-linux")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		e.user = sandboxtest.NewUser(t)
		e.helper = e.user.Install(t, self, "netns.test")
	} else {
		e.helper = self
	}
	return e
}

// box is a sandbox started as den starts one: its own user, network and
// pid namespaces, the host's / read-only, waiting on --userns-block-fd
// with its uid and gid maps written. With the network, /etc/resolv.conf
// comes through a netns.Gate.
type box struct {
	cmd   *exec.Cmd
	pid   int // the sandbox's first process, on the host
	block *os.File
	gate  *netns.Gate // nil without the network
	out   bytes.Buffer
	first chan struct{} // closed at the sandbox's first output
	done  chan struct{}
	err   error
}

// firstWriter writes to w and closes first at the first write.
type firstWriter struct {
	w     *bytes.Buffer
	once  sync.Once
	first chan struct{}
}

func (f *firstWriter) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	return f.w.Write(p)
}

// startBox starts argv in a sandbox, with extra environment variables,
// and leaves it waiting on --userns-block-fd.
func (e *env) startBox(t testing.TB, network bool, extraEnv []string, argv ...string) *box {
	t.Helper()
	blockR, blockW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer infoR.Close()
	b := &box{block: blockW, first: make(chan struct{}), done: make(chan struct{})}
	files := []*os.File{blockR, infoW}
	a := []string{"--unshare-user", "--unshare-net", "--unshare-pid",
		"--userns-block-fd", "3", "--info-fd", "4", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"}
	if network {
		if b.gate, err = netns.NewGate(); err != nil {
			t.Fatal(err)
		}
		files = append(files, b.gate.File())
		a = append(a, "--ro-bind-data", "5", "/etc/resolv.conf")
	}
	b.cmd = exec.Command(e.bwrap, append(append(a, "--"), argv...)...)
	b.cmd.Dir = "/"
	b.cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, extraEnv...)
	w := &firstWriter{w: &b.out, first: b.first}
	b.cmd.Stdout, b.cmd.Stderr = w, w
	b.cmd.ExtraFiles = files
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if e.user != nil {
		b.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(e.user.UID), Gid: uint32(e.user.GID), Groups: []uint32{}}
	}
	err = b.cmd.Start()
	blockR.Close()
	infoW.Close()
	if b.gate != nil {
		b.gate.File().Close()
	}
	if err != nil {
		blockW.Close()
		b.open()
		t.Fatalf("start bwrap: %v", err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(b.kill)
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPid <= 0 {
		b.kill()
		t.Fatalf("bwrap info: %v (%+v): %s", err, info, b.out.String())
	}
	b.pid = info.ChildPid
	if err := e.writeMaps(b.pid); err != nil {
		b.kill()
		t.Fatalf("maps: %v", err)
	}
	return b
}

// writeMaps maps the sandbox's root to the user bwrap runs as: as root
// to the throwaway user (den as root, never "0 0 1"), as an ordinary
// user to itself.
func (e *env) writeMaps(pid int) error {
	base := "/proc/" + strconv.Itoa(pid) + "/"
	uid, gid := os.Getuid(), os.Getgid()
	if e.user != nil {
		uid, gid = e.user.UID, e.user.GID
	} else if err := os.WriteFile(base+"setgroups", []byte("deny"), 0); err != nil {
		return err
	}
	if err := os.WriteFile(base+"uid_map", fmt.Appendf(nil, "0 %d 1\n", uid), 0); err != nil {
		return err
	}
	return os.WriteFile(base+"gid_map", fmt.Appendf(nil, "0 %d 1\n", gid), 0)
}

// release lets bwrap go on past --userns-block-fd.
func (b *box) release(t testing.TB) {
	t.Helper()
	if _, err := b.block.Write([]byte{1}); err != nil {
		t.Fatalf("release: %v", err)
	}
	b.block.Close()
}

// attach releases the sandbox, waits at its gate and attaches the
// network, as bwrap's Start does; open lets it run.
func (b *box) attach(t testing.TB, ctx context.Context, o netns.Options) (*netns.Net, error) {
	t.Helper()
	b.toGate(t)
	return netns.Attach(ctx, b.pid, o)
}

// toGate releases the sandbox and waits until bwrap is at the gate.
func (b *box) toGate(t testing.TB) {
	t.Helper()
	b.release(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.gate.Wait(ctx); err != nil {
		b.kill()
		t.Fatalf("gate: %v: %s", err, b.out.String())
	}
}

func (b *box) open() {
	if b.gate != nil {
		b.gate.Open()
	}
}

// wait waits for the sandbox to end, for at most a minute.
func (b *box) wait(t testing.TB) (string, error) {
	t.Helper()
	b.open()
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		b.kill()
		t.Fatalf("sandbox still runs after a minute: %s", b.out.String())
	}
	return b.out.String(), b.err
}

// kill ends the sandbox: its first process, then bwrap.
func (b *box) kill() {
	b.open()
	b.block.Close()
	select {
	case <-b.done:
		return
	default:
	}
	if b.pid > 0 {
		unix.Kill(b.pid, unix.SIGKILL)
	}
	select {
	case <-b.done:
	case <-time.After(3 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
