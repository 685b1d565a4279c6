package bwrap_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// innerEnv is set in every run as the throwaway user, so that such a
// run never tries to make users itself.
const innerEnv = "DEN_TEST_UNPRIVILEGED"

// unprivBound is the longest the conformance suite may take as the
// throwaway user before the test kills it and fails: a limit, not an
// expectation.
const unprivBound = 5 * time.Minute

// TestConformanceUnprivileged runs the conformance suite as an ordinary
// user: den then maps that user to root in the sandbox's user namespace
// instead of a 65536-id range, bounds processes with RLIMIT_NPROC, and
// has no control groups. As root, the test makes a throwaway system
// account and runs this very test binary as it.
func TestConformanceUnprivileged(t *testing.T) {
	a := newAccount(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(a.dir, "bwrap.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), unprivBound)
	defer cancel()
	cmd := a.command(ctx, bin, "-test.run", "^TestConformance$", "-test.v", "-test.count=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the suite as %s: still running after %v, killed\n%s", a.name, unprivBound, out.String())
	case err != nil:
		t.Fatalf("the suite as %s (uid %d): %v\n%s", a.name, a.uid, err, out.String())
	case !strings.HasSuffix(out.String(), "\nPASS\n") || !strings.Contains(out.String(), "--- PASS: TestConformance "):
		t.Fatalf("the suite as %s did not report PASS:\n%s", a.name, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("the suite as %s skipped tests:\n%s", a.name, out.String())
	}
	t.Logf("the conformance suite passed as %s (uid %d)", a.name, a.uid)
}

// account is a throwaway system user, and folders for it under one
// temporary folder the test removes: dir is readable by the user, home
// (HOME) and tmp (TMPDIR) are its own.
type account struct {
	name      string
	uid, gid  int
	dir       string
	home, tmp string
}

// newAccount makes a throwaway user. It skips unless the test runs as
// root, and fails (CI=true) or skips when a tool is missing. Cleanup
// kills the user's processes, deletes it and removes its folders.
func newAccount(t *testing.T) *account {
	t.Helper()
	if os.Getenv(innerEnv) != "" {
		t.Skipf("%s is set: this run already is the throwaway user's", innerEnv)
	}
	if os.Getuid() != 0 {
		t.Skipf("the unprivileged tests make a throwaway user, which needs root (this is uid %d); run them as root", os.Getuid())
	}
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	useradd := needSbin(t, "useradd", "passwd")
	userdel := needSbin(t, "userdel", "passwd")

	dir, err := os.MkdirTemp("", "den-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if p := unreachable(dir); p != "" {
		t.Fatalf("%s is not searchable by other users, so the throwaway user cannot reach %s: set TMPDIR to a folder it can reach", p, dir)
	}

	b := make([]byte, 4)
	rand.Read(b)
	a := &account{name: "den-test-" + hex.EncodeToString(b), uid: -1, dir: dir,
		home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "home", "tmp")}
	if out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", a.name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", a.name, err, out)
	}
	// Runs before the folder is removed (cleanups run last first).
	t.Cleanup(func() {
		if a.uid > 0 {
			if left := killUser(a.uid); len(left) > 0 {
				t.Errorf("processes of %s (uid %d) survive SIGKILL: %v", a.name, a.uid, left)
			}
		}
		if out, err := exec.Command(userdel, a.name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", a.name, err, out)
		}
	})
	u, err := user.Lookup(a.name)
	if err != nil {
		t.Fatal(err)
	}
	a.uid, _ = strconv.Atoi(u.Uid)
	a.gid, _ = strconv.Atoi(u.Gid)
	if a.uid <= 0 {
		t.Fatalf("useradd made %s with uid %q", a.name, u.Uid)
	}
	for _, d := range []string{a.home, a.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, a.uid, a.gid); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// command returns name with args, to run as the account with only the
// environment given here: HOME, TMPDIR, PATH, CI and innerEnv.
func (a *account) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = a.home
	cmd.Env = []string{
		"HOME=" + a.home, "TMPDIR=" + a.tmp, "PATH=" + os.Getenv("PATH"),
		"CI=" + os.Getenv("CI"), innerEnv + "=1",
	}
	// No supplementary groups: the user's own gid only.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), Groups: []uint32{}},
	}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// needSbin is sandboxtest.Need for tools that live in sbin, which a
// root shell's PATH may lack.
func needSbin(t *testing.T, tool, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(tool); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, tool)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return sandboxtest.Need(t, tool, pkg)
}

// unreachable returns the first folder above dir that other users cannot
// search, or "".
func unreachable(dir string) string {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return p
		}
		if p == "/" {
			return ""
		}
	}
}

// userProcs lists the host processes that have uid as their real,
// effective or saved user id, zombies included.
func userProcs(uid int) []int {
	var out []int
	for _, pid := range sandbox.AllPids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 4 && f[0] == "Uid:" {
				for _, id := range f[1:4] {
					if id == strconv.Itoa(uid) {
						out = append(out, pid)
						break
					}
				}
				break
			}
		}
	}
	return out
}

// killUser kills every process of uid until none runs, for at most
// about 10 s, and returns what still runs.
func killUser(uid int) []int {
	var left []int
	for range 200 {
		left = left[:0]
		for _, pid := range userProcs(uid) {
			if !zombie(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

// zombie reports whether pid has exited (or is gone) but not been
// reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
