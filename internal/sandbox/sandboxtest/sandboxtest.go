// Package sandboxtest is the conformance suite every sandbox backend
// passes, on a small real rootfs built from the host's static busybox,
// plus the escape attempts that an isolating backend must stop.
package sandboxtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/rootfs"
)

// Need fails the test when a system tool is missing in CI (CI=true) and
// skips it elsewhere, naming the Debian package that provides it.
func Need(t testing.TB, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: install the Debian package %s", tool, pkg)
	}
	t.Skipf("%s not found: install the Debian package %s", tool, pkg)
	return ""
}

// NeedRoot fails (under CI=true, which runs as root) or skips a test
// that must run as root, saying why.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: run the tests as root", why)
	}
	t.Skipf("%s: run the tests as root", why)
}

// NeedUserXattrs fails (under CI=true) or skips a test that needs the
// file system of dir to keep user.* extended attributes, saying so:
// ext4, xfs and btrfs keep them, tmpfs before Linux 6.6 does not.
func NeedUserXattrs(t testing.TB, dir string) {
	t.Helper()
	probe, err := os.CreateTemp(dir, ".xattr-probe-")
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	defer os.Remove(probe.Name())
	err = unix.Setxattr(probe.Name(), "user.den_probe", []byte("1"), 0)
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the file system of %s keeps no user.* extended attributes (%v): run the tests with TMPDIR on ext4, xfs or btrfs", dir, err)
	}
	t.Skipf("the file system of %s keeps no user.* extended attributes (%v): run the tests with TMPDIR on ext4, xfs or btrfs", dir, err)
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error

	idsOnce sync.Once
	ids     sandbox.IDMap
	idsErr  error
)

// IDs returns the id map test computers run with: den's own choice for
// the user the test runs as (as root, a range recorded once per machine
// under the temp dir, as den records its own under the data dir).
func IDs(t testing.TB) sandbox.IDMap {
	t.Helper()
	idsOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "den-sandboxtest-"+strconv.Itoa(os.Getuid()))
		if idsErr = os.MkdirAll(dir, 0o755); idsErr == nil {
			ids, idsErr = idmap.For(dir)
		}
	})
	if idsErr != nil {
		t.Fatalf("id map: %v", idsErr)
	}
	return ids
}

// Own gives host folders a test binds read-write into a computer to
// root inside, as den gives its computers their folders.
func Own(t testing.TB, paths ...string) {
	t.Helper()
	uid, gid, _ := IDs(t).Root()
	if os.Geteuid() != 0 {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// FolderUID is the host owner of the user folders tests bind when they
// run as root: a uid no account and no computer has.
const FolderUID = 4242

// FolderOwner is the host uid that owns UserFolder's folders.
func FolderOwner() uint32 {
	if os.Geteuid() == 0 {
		return FolderUID
	}
	return uint32(os.Geteuid())
}

// UserFolder returns a new folder as a user of den would mount it: owned
// by FolderOwner, mode 0700.
func UserFolder(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	GiveToUser(t, d)
	return d
}

// GiveToUser makes paths FolderOwner's.
func GiveToUser(t testing.TB, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, FolderUID, FolderUID); err != nil {
			t.Fatal(err)
		}
	}
}

// Rootfs returns a busybox rootfs, provisioned once per user and
// machine under the temp dir and shared by the test binaries (they write
// only below /workspace, /tmp and /root), owned by the computer's ids
// (IDs). Provisioning is atomic, so test binaries running at once agree
// on one tree.
func Rootfs(t testing.TB) string {
	t.Helper()
	Need(t, "busybox", "busybox-static")
	m := IDs(t)
	rootOnce.Do(func() {
		uid, _, _ := m.Root()
		base := filepath.Join(os.TempDir(), "den-sandboxtest-"+strconv.Itoa(os.Getuid()))
		rootDir = filepath.Join(base, "rootfs-"+strconv.Itoa(uid))
		if _, err := os.Stat(filepath.Join(rootDir, "bin", "busybox")); err == nil {
			return
		}
		if rootErr = os.MkdirAll(base, 0o755); rootErr != nil {
			return
		}
		tmp, err := os.MkdirTemp(base, ".rootfs-")
		if err != nil {
			rootErr = err
			return
		}
		defer os.RemoveAll(tmp)
		dir := filepath.Join(tmp, "rootfs")
		if _, rootErr = rootfs.Provision(context.Background(), dir, rootfs.Source{Kind: rootfs.Busybox}, rootfs.Options{}); rootErr != nil {
			return
		}
		if os.Geteuid() == 0 {
			if _, rootErr = idmap.Shift(dir, idmap.Identity, m, nil); rootErr != nil {
				return
			}
		}
		if err := os.Rename(dir, rootDir); err != nil && !errors.Is(err, os.ErrExist) && !errors.Is(err, unix.ENOTEMPTY) {
			rootErr = err
		}
	})
	if rootErr != nil {
		t.Fatalf("busybox rootfs: %v", rootErr)
	}
	return rootDir
}

// Env is one test's computer: its host folders and the session.
type Env struct {
	Dir       string // host folder holding the session's folders
	Workspace string // host side of /workspace
	Offloads  string // host side of /den/offloads
	Session   *sandbox.Session
}

// Option changes the session a test starts.
type Option func(*sandbox.SessionOptions)

// Start starts a session on the busybox rootfs with backend b.
func Start(t testing.TB, b sandbox.Backend, opts ...Option) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{Dir: dir, Workspace: filepath.Join(dir, "workspace"), Offloads: filepath.Join(dir, "offloads")}
	for _, d := range []string{e.Workspace, e.Offloads} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	Own(t, e.Workspace, e.Offloads)
	o := sandbox.SessionOptions{
		Backend: b,
		Spec: sandbox.Spec{
			Rootfs:  Rootfs(t),
			IDs:     IDs(t),
			Network: true,
			Egress:  egress.New(egress.Options{}).Net(egress.Scope{Agent: "test", Policy: egress.Policy{Mode: egress.Open}}),
			Binds: []sandbox.Bind{
				{Host: e.Workspace, Guest: sandbox.GuestWorkspace},
				{Host: e.Offloads, Guest: sandbox.GuestOffloads},
			},
		},
		ControlDir: controlDir(t, dir),
		OffloadDir: e.Offloads,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/root", "LANG=C.UTF-8", "PWD=/workspace"},
		KillGrace:  300 * time.Millisecond,
		Timeout:    30 * time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := sandbox.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	e.Session = s
	t.Cleanup(func() { s.Close() })
	return e
}

// Run runs a script in the persistent shell and fails the test on a Go
// error.
func (e *Env) Run(t testing.TB, script string, timeout ...time.Duration) *sandbox.Result {
	t.Helper()
	c := sandbox.Command{Script: script}
	if len(timeout) > 0 {
		c.Timeout = timeout[0]
	}
	r, err := e.Session.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return r
}

// Exec runs a script as a fresh process.
func (e *Env) Exec(t testing.TB, script string, timeout ...time.Duration) *sandbox.Result {
	t.Helper()
	c := sandbox.Command{Script: script}
	if len(timeout) > 0 {
		c.Timeout = timeout[0]
	}
	r, err := e.Session.Exec(context.Background(), c)
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return r
}

// HostProcsWith lists host processes whose command line contains s.
func HostProcsWith(s string) []int {
	var out []int
	for _, pid := range sandbox.AllPids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitGone polls until no host process has s in its command line, for
// at most about n polls of 50 ms; it returns what is left.
func WaitGone(s string, n int) []int {
	var left []int
	for range n {
		left = HostProcsWith(s)
		// Zombies of killed processes are fine: they no longer run.
		left = running(left)
		if len(left) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

func running(pids []int) []int {
	var out []int
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndex(string(b), ") "); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// controlDir is where a test session's control folder goes: on a tmpfs
// when there is one, as den itself does (see computer.runDir), so that
// benchmarks measure what users get.
func controlDir(t testing.TB, fallback string) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		if d, err := os.MkdirTemp("/dev/shm", "den-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return filepath.Join(d, "control")
		}
	}
	return filepath.Join(fallback, "control")
}

// SwapCanary is the content of the host file SwapFolderForLink offers:
// an archive or a copy holding it read the host through a link.
const SwapCanary = "host-file-the-computer-must-not-get"

// SwapFolderForLink plays a hostile computer until the test ends: it
// keeps replacing the folder swap (holding a harmless file "secret")
// with a link to a host folder whose "secret" holds SwapCanary, and
// back.
func SwapFolderForLink(t testing.TB, swap string) {
	t.Helper()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "secret"), []byte(SwapCanary), 0o600); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tmp := swap + ".new"
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.MkdirAll(tmp, 0o755)
			os.WriteFile(filepath.Join(tmp, "secret"), []byte("harmless"), 0o644)
			os.RemoveAll(swap)
			os.Rename(tmp, swap)
			os.Remove(tmp)
			os.Symlink(host, tmp)
			os.RemoveAll(swap)
			os.Rename(tmp, swap)
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}
