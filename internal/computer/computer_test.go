package computer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/idmap"
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
	sandboxtest.NeedRoot(t, "debootstrap needs root (mmdebstrap serves ordinary users)")
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
		if os.Getenv("CI") == "true" {
			t.Fatalf("no cgroups as root: %v", err)
		}
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

// TestOldComputerGetsItsOwnIDs: a computer made by a den whose
// computers' root was host root (files owned by the inside ids
// themselves, no owner in computer.json) is given to its own range at
// its next start, session folders included, and then works as before.
func TestOldComputerGetsItsOwnIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("as an ordinary user the computer's root is that user: nothing to convert")
	}
	m := newManager(t)
	c := busyboxComputer(t, m, "olden")
	ids, err := m.IDs()
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := ids.Root()
	// Make it as an older den left it.
	if _, err := idmap.Shift(c.Rootfs(), ids, idmap.Identity, nil); err != nil {
		t.Fatal(err)
	}
	info, _, _ := c.Info()
	info.Owner = nil
	if err := rootfs.WriteInfo(filepath.Join(m.DataDir(), "agents", "olden", "computer.json"), info); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(c.SessionDir("s1"), "workspace")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("old\n"), 0o644)
	if fi, _ := os.Stat(filepath.Join(c.Rootfs(), "root")); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("setup: /root is not host root's")
	}

	s, err := c.Start(context.Background(), "s1", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := run(t, s, "echo more >> /workspace/notes.txt && touch /root/x && stat -c '%u %g' /root /workspace/notes.txt")
	if r.ExitCode != 0 || r.Output != "0 0\n0 0\n" {
		t.Fatalf("after conversion: %+v", r)
	}
	for _, p := range []string{filepath.Join(c.Rootfs(), "root"), filepath.Join(c.Rootfs(), "bin", "busybox"), filepath.Join(ws, "notes.txt")} {
		st := lstat(t, p)
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s belongs to %d:%d, not the computer's root %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	info, _, _ = c.Info()
	if info.Owner == nil || int(info.Owner.UID) != uid {
		t.Errorf("computer.json does not record the owner: %+v", info.Owner)
	}
}

// TestExportRecordsInsideIDs: an exported computer's archive holds the
// ids the computer sees (root is 0), not the host's, so it imports into
// another den (another range) intact.
func TestExportRecordsInsideIDs(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "exporter")
	s, err := c.Start(context.Background(), "e", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "mkdir -p /root/keep && echo kept > /root/keep/a && ln /root/keep/a /root/keep/b && ln -s a /root/keep/c && mkfifo /root/keep/f && chmod 4750 /root/keep/a")
	s.Close()
	var buf bytes.Buffer
	if err := c.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if h.Uid != 0 && h.Uid != 65534 {
			t.Errorf("%s recorded with uid %d: want the inside id", h.Name, h.Uid)
		}
	}
	for name, want := range map[string]byte{"./root/keep/a": tar.TypeReg, "./root/keep/b": tar.TypeLink, "./root/keep/c": tar.TypeSymlink, "./root/keep/f": tar.TypeFifo, "./bin/busybox": tar.TypeReg} {
		h := seen[name]
		if h == nil {
			t.Errorf("%s missing from the export", name)
			continue
		}
		if h.Typeflag != want {
			t.Errorf("%s: type %c, want %c", name, h.Typeflag, want)
		}
	}
	if h := seen["./root/keep/a"]; h != nil && h.Mode&0o7777 != 0o4750 {
		t.Errorf("mode of a: %o", h.Mode)
	}
	if h := seen["./root/keep/c"]; h != nil && h.Linkname != "a" {
		t.Errorf("the link c points to %q, want a", h.Linkname)
	}
	// Import it as another agent's computer and use it.
	file := filepath.Join(t.TempDir(), "c.tar")
	os.WriteFile(file, buf.Bytes(), 0o600)
	c2, _ := m.Computer("importer")
	if _, err := c2.Import(context.Background(), file); err != nil {
		t.Fatal(err)
	}
	s2, err := c2.Start(context.Background(), "i", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r := run(t, s2, "cat /root/keep/b; stat -c '%u %a' /root/keep/a; echo new > /root/keep/new && echo ok"); r.Output != "kept\n0 4750\nok\n" {
		t.Errorf("imported computer: %q", r.Output)
	}
}

func lstat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestDiskCap: a computer cannot fill the host's disk. One big file
// stops at the cap (RLIMIT_FSIZE); many small ones are found by den's
// measure and the command is stopped with a note; the computer can
// still free space afterwards.
func TestDiskCap(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "filler")
	capBytes := c.DiskUse() + 48<<20
	s, err := c.Start(context.Background(), "d", computer.SessionOptions{Limits: sandbox.Limits{DiskBytes: capBytes}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// One big file: bounded by RLIMIT_FSIZE where den may set it (root
	// without CAP_SYS_RESOURCE, as in some containers, may not); else
	// the result says the computer is over its cap.
	r := run(t, s, "dd if=/dev/zero of=/root/big bs=1M count=200 2>&1; echo rc=$?")
	if strings.Contains(r.Output, "rc=0") && !strings.Contains(r.Note, "over its disk cap") {
		t.Errorf("a 200 MB file was written under a 48 MB cap, unsaid: %q, note %q", r.Output, r.Note)
	}
	run(t, s, "rm -f /root/big")
	r, err = s.Run(context.Background(), sandbox.Command{
		Script:  "mkdir -p /root/fill; i=0; while [ $i -lt 300 ]; do dd if=/dev/zero of=/root/fill/$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.05; done; echo finished",
		Timeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Output, "finished") || !strings.Contains(r.Note, "disk use passed its cap") || r.ExitCode == 0 {
		t.Errorf("filling past the cap was not stopped: exit %d, note %q, output %q", r.ExitCode, r.Note, r.Output)
	}
	if used := c.DiskUse(); used > capBytes+64<<20 {
		t.Errorf("the computer holds %d bytes, far past its cap of %d", used, capBytes)
	}
	if r := run(t, s, "rm -rf /root/fill && echo freed"); r.Output != "freed\n" {
		t.Errorf("could not free space over the cap: %+v", r)
	}
}

// TestExportNeverFollowsSwappedFolder: a computer that keeps swapping a
// folder of its own for a link to a host folder while it is exported
// never gets the host folder's file into the archive.
func TestExportNeverFollowsSwappedFolder(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "swapper")
	sandboxtest.SwapFolderForLink(t, filepath.Join(c.Rootfs(), "swap"))
	for range 30 {
		var buf bytes.Buffer
		if err := c.Export(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(buf.Bytes(), []byte(sandboxtest.SwapCanary)) {
			t.Fatal("a host file reached the export through a folder swapped for a link")
		}
	}
}
