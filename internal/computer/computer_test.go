package computer_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

func newManager(t *testing.T) *computer.Manager {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(t.TempDir(), b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func busyboxComputer(t *testing.T, m *computer.Manager, agent string) *computer.Computer {
	t.Helper()
	sandboxtest.Need(t, "busybox", "busybox-static")
	c, err := m.Computer(agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
		t.Fatal(err)
	}
	return c
}

func run(t *testing.T, s *computer.Session, script string) *sandbox.Result {
	t.Helper()
	r, err := s.Run(context.Background(), sandbox.Command{Script: script, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return r
}

// testCacheDir is where slow fixtures (the debootstrapped base) are kept
// between runs.
func testCacheDir(t *testing.T) string {
	if d := os.Getenv("DEN_TEST_CACHE"); d != "" {
		return d
	}
	if os.Getuid() == 0 {
		return "/var/cache/den-test"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "den-test")
}

func TestSessionsAreSeparate(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "alice")
	a, err := c.Start(context.Background(), "a", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := c.Start(context.Background(), "b", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run(t, a, "echo secret-a > /workspace/a.txt; echo att > /den/attachments/x; echo shared > /den/shared/s.txt; echo home > /root/h.txt")
	r := run(t, b, "ls /workspace /den/attachments; cat /den/shared/s.txt /root/h.txt")
	if strings.Contains(r.Output, "a.txt") || strings.Contains(r.Output, "x\n") {
		t.Errorf("session b sees a's folders: %q", r.Output)
	}
	if !strings.Contains(r.Output, "shared") || !strings.Contains(r.Output, "home") {
		t.Errorf("per-agent folders and /root not shared: %q", r.Output)
	}
	if got, _ := os.ReadFile(filepath.Join(c.SessionDir("a"), "workspace", "a.txt")); string(got) != "secret-a\n" {
		t.Errorf("session folder on the host: %q", got)
	}
	r = run(t, a, "ls -d /workspace /den/attachments /den/offloads /den/browser /den/memory /den/skills /den/shared /root")
	if r.ExitCode != 0 {
		t.Errorf("layout: %+v", r)
	}
}

func TestComputerPersistsAndResets(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "bob")
	s, err := c.Start(context.Background(), "one", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "mkdir -p /opt/tool && echo v1 > /opt/tool/version; echo kept > /root/notes")
	s.Close()
	s, err = c.Start(context.Background(), "two", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, s, "cat /opt/tool/version"); r.Output != "v1\n" {
		t.Errorf("not persisted: %q", r.Output)
	}
	// A computer with a running session is not reset under it.
	if err := c.Reset(false); !errors.Is(err, computer.ErrInUse) {
		t.Errorf("reset while running: %v", err)
	}
	s.Close()
	if err := c.Reset(true); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Info(); ok {
		t.Fatal("rootfs still there after reset")
	}
	busyboxComputer(t, m, "bob")
	if err := c.RestoreHome(); err != nil {
		t.Fatal(err)
	}
	s, err = c.Start(context.Background(), "three", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := run(t, s, "cat /root/notes; test -e /opt/tool/version && echo STILL"); r.Output != "kept\n" {
		t.Errorf("after reset --keep-home: %q", r.Output)
	}
	// Asking for another source for an existing computer is refused.
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Debian}, true); !errors.Is(err, computer.ErrNoRootfsArg) {
		t.Errorf("other source: %v", err)
	}
}

func TestStaleControlFolderDoesNotBlockReset(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "carol")
	// A den that was killed leaves its control folder behind; pid 1 is
	// never a den of ours... but it is alive, so use a pid that is not.
	stale := filepath.Join(m.RunDir(), "carol.x.999999999.deadbeef")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(false); err != nil {
		t.Fatalf("reset with a stale control folder: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale control folder kept")
	}
}

func TestForkBombStaysInside(t *testing.T) {
	m := newManager(t)
	if m.CgroupError() != nil && os.Getuid() == 0 {
		t.Logf("no cgroups: %v (the process limit falls back to RLIMIT_NPROC only for ordinary users)", m.CgroupError())
		if os.Getenv("CI") == "true" {
			t.Fatal("CI machines run den as root with cgroups")
		}
		t.Skip("root without cgroups has no process limit")
	}
	c := busyboxComputer(t, m, "dave")
	s, err := c.Start(context.Background(), "bomb", computer.SessionOptions{Network: true, Limits: sandbox.Limits{Pids: 64, MemoryBytes: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Run(context.Background(), sandbox.Command{Script: "b(){ b|b& }; b; sleep 30", Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut {
		t.Logf("fork bomb ended by itself: %+v", r)
	}
	// The host (and den) can still fork.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("host cannot fork: %v", err)
	}
	// The computer still answers.
	if r := run(t, s, "echo alive"); r.Output != "alive\n" {
		t.Errorf("after the bomb: %+v", r)
	}
}

func TestDebianAptPersists(t *testing.T) {
	sandboxtest.Need(t, "debootstrap", "debootstrap")
	if os.Getuid() != 0 {
		t.Skip("debootstrap needs root (mmdebstrap serves ordinary users)")
	}
	m := newManager(t)
	m.RootfsOptions.CacheDir = testCacheDir(t)
	c, err := m.Computer("debian")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Debian}, true)
	if err != nil {
		t.Fatal(err)
	}
	if info.Distro != rootfs.DistroDebian || info.PackageManager != rootfs.Apt {
		t.Fatalf("info: %+v", info)
	}
	s, err := c.Start(context.Background(), "install", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background(), sandbox.Command{Script: "apt-get update -q && apt-get install -y -q sl", Timeout: 5 * time.Minute})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("apt install: %v exit %d\n%s", err, r.ExitCode, r.Output)
	}
	s.Close()
	s, err = c.Start(context.Background(), "later", computer.SessionOptions{Network: false})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r = run(t, s, "dpkg -s sl | grep Status; test -x /usr/games/sl && echo present; id -u")
	if !strings.Contains(r.Output, "install ok installed") || !strings.Contains(r.Output, "present") {
		t.Errorf("package gone after restart: %q", r.Output)
	}
}

func TestStaleCgroupSwept(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs a writable cgroup hierarchy (root)")
	}
	cg, err := cgroup.New("den")
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	// What a den killed with SIGKILL leaves: pid 999999999 never runs.
	g, err := cg.Create("agent-sweep/s.999999999.dead", cgroup.Limits{Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	live, err := cg.Create("agent-sweep/s."+strconv.Itoa(os.Getpid())+".live", cgroup.Limits{Pids: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	newManager(t)
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale group kept: %s", d)
		}
	}
	for _, d := range live.Dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("live group removed: %s", d)
		}
	}
}
