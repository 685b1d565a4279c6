package clitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/cli"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// unprivEnv is set in everything run as the throwaway user, so that no
// such run ever makes users itself.
const unprivEnv = "DEN_TEST_UNPRIVILEGED"

// TestUnprivileged runs den as an ordinary user, which is how most
// users run it: den maps that user to root in the sandbox, bounds the
// computer's processes with RLIMIT_NPROC, and usually has no control
// groups. As root, the test makes a throwaway system account for it.
// The subtests share the account's data dir and its computer, which
// the first den exec creates.
func TestUnprivileged(t *testing.T) {
	u := newUnprivUser(t)

	// The user is root in its computer.
	r := u.den(t, "exec", "--rootfs", "busybox", "--", "id", "-u")
	if r.Code != 0 || r.Stdout != "0\n" {
		t.Fatalf("den exec --rootfs busybox -- id -u as %s: want \"0\" and exit 0, got %v", u.name, r)
	}

	t.Run("Doctor", func(t *testing.T) {
		r := u.den(t, "doctor")
		if r.Code != 0 || strings.Contains(r.Stdout, "FAIL") {
			t.Errorf("den doctor as %s: want exit 0 and no FAIL, got %v", u.name, r)
		}
		r = u.den(t, "doctor", "--json")
		var rep struct {
			OK     bool
			Tier   string
			Checks []struct {
				Name, Detail, Fix string
				OK, Fatal         bool
			}
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("den doctor --json: %v\n%v", err, r)
		}
		if r.Code != 0 || !rep.OK || rep.Tier != "namespaces" {
			t.Errorf("den doctor --json as %s: want exit 0, ok and tier namespaces, got %+v\n%v", u.name, rep, r)
		}
		found := map[string]bool{}
		for _, c := range rep.Checks {
			found[c.Name] = true
			switch c.Name {
			case "resource limits (cgroups)":
				// The account is brand new: it owns no cgroup and none
				// was delegated to it, so limits other than RLIMIT_NPROC
				// are unavailable. That is a warning, not a failure, and
				// doctor must say so.
				if c.OK || c.Fatal || c.Detail == "" || !strings.Contains(c.Fix, "RLIMIT_NPROC") {
					t.Errorf("cgroups as %s, which has none delegated: want a non-fatal warning that says why and names RLIMIT_NPROC, got %+v", u.name, c)
				}
			case "computer start":
				if !c.OK || !strings.Contains(c.Detail, "uid 0") {
					t.Errorf("computer start as %s: want a start as uid 0, got %+v", u.name, c)
				}
			}
		}
		for _, name := range []string{"resource limits (cgroups)", "computer start"} {
			if !found[name] {
				t.Errorf("den doctor --json as %s has no %q check:\n%s", u.name, name, r.Stdout)
			}
		}
	})

	t.Run("HardProcessLimitBelowDefault", func(t *testing.T) {
		// A user whose hard RLIMIT_NPROC is below den's default cannot
		// raise it; den must still start, with the user's limit.
		prlimit := sandboxtest.Need(t, "prlimit", "util-linux")
		r := u.run(t, prlimit, "--nproc=512:512", "--", u.bin, "exec", "--", "sh", "-c", "id -u; grep 'Max processes' /proc/self/limits")
		lines := strings.Split(r.Stdout, "\n")
		if r.Code != 0 || len(lines) < 2 || lines[0] != "0" || !slices.Equal(strings.Fields(lines[1]), []string{"Max", "processes", "512", "512", "processes"}) {
			t.Errorf("den exec with a hard process limit of 512: want uid 0 and the limit 512 inside, got %v", r)
		}
	})

	t.Run("ForkBomb", func(t *testing.T) { testUnprivForkBomb(t, u) })
}

// testUnprivForkBomb runs a fork bomb as the account and checks that
// RLIMIT_NPROC holds it, that the timeout ends it, and that nothing of
// it is left.
func testUnprivForkBomb(t *testing.T, u *unprivUser) {
	prlimit := sandboxtest.Need(t, "prlimit", "util-linux")
	// A safety net for the host in case the sandbox's limit is gone:
	// den and everything it starts may not exceed twice the default.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		t.Fatal(err)
	}
	ceiling := min(uint64(2*cli.DefaultPids), lim.Max)

	// The peak number of the account's processes while the bomb runs.
	// useradd may reuse the uid of a deleted user whose zombies a
	// non-reaping init still holds: those are not counted.
	before := map[int]bool{}
	for _, pid := range unprivProcs(u.uid) {
		before[pid] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	peak := 0
	wg.Go(func() {
		for {
			n := 0
			for _, pid := range unprivProcs(u.uid) {
				if !before[pid] {
					n++
				}
			}
			peak = max(peak, n)
			select {
			case <-stop:
				return
			case <-time.After(PollInterval):
			}
		}
	})
	// busybox's sh takes no ':' as a function name, and the classic
	// bomb's first shell returns at once, which would end den's command
	// (and the computer) before the bomb grows: `exec sleep` keeps the
	// command running until the timeout.
	bomb := "bomb() { bomb | bomb & }; bomb; exec sleep 60"
	r := u.run(t, prlimit, "--nproc="+strconv.FormatUint(ceiling, 10), "--",
		u.bin, "exec", "--timeout", "3s", "--", "sh", "-c", bomb)
	close(stop)
	wg.Wait()

	if r.Code != 124 || !strings.Contains(r.Stderr, "timed out") {
		t.Errorf("fork bomb with --timeout 3s: want exit 124 and \"timed out\", got exit %d, stderr ending %q", r.Code, unprivTail(r.Stderr, 400))
	}
	// den and bwrap's parent run outside the sandbox, beyond its limit.
	if peak > cli.DefaultPids+16 {
		t.Errorf("fork bomb as %s: %d processes at once, above the sandbox's limit of %d", u.name, peak, cli.DefaultPids)
	}
	t.Logf("fork bomb as %s: at most %d processes seen", u.name, peak)

	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("the test cannot fork after the fork bomb: %v", err)
	}
	if r := u.run(t, "true"); r.Code != 0 {
		t.Errorf("%s cannot fork after the fork bomb: %v", u.name, r)
	}
	var left []int
	for range MaxPolls {
		if left = unprivRunning(u.uid); len(left) == 0 {
			break
		}
		time.Sleep(PollInterval)
	}
	if len(left) > 0 {
		t.Errorf("after the fork bomb, %d processes of %s still run: %v", len(left), u.name, left[:min(len(left), 20)])
	}
}

// unprivUser is a throwaway system user, with folders under one
// temporary folder the test removes: dir holds den, readable by the
// user; home (HOME, holding DEN_HOME) and tmp (TMPDIR) are its own.
type unprivUser struct {
	name      string
	uid, gid  int
	dir, bin  string
	home, tmp string
}

// newUnprivUser makes a throwaway user and copies den where it can run
// it. It skips unless the test runs as root, and fails (CI=true) or
// skips when a tool is missing. Cleanup kills the user's processes,
// deletes it and removes its folders.
func newUnprivUser(t *testing.T) *unprivUser {
	t.Helper()
	if os.Getenv(unprivEnv) != "" {
		t.Skipf("%s is set: this run already is the throwaway user's", unprivEnv)
	}
	if os.Getuid() != 0 {
		t.Skipf("the unprivileged tests make a throwaway user, which needs root (this is uid %d); run them as root", os.Getuid())
	}
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	useradd := unprivNeedSbin(t, "useradd", "passwd")
	userdel := unprivNeedSbin(t, "userdel", "passwd")

	dir, err := os.MkdirTemp("", "den-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		makeWritable(dir)
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s is not searchable by other users, so the throwaway user cannot reach %s: set TMPDIR to a folder it can reach", p, dir)
		}
		if p == "/" {
			break
		}
	}
	b := make([]byte, 4)
	rand.Read(b)
	u := &unprivUser{name: "den-test-" + hex.EncodeToString(b), uid: -1, dir: dir, bin: filepath.Join(dir, "den"),
		home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "home", "tmp")}
	if err := unprivCopy(denBin, u.bin); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", u.name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", u.name, err, out)
	}
	// Runs before the folder is removed (cleanups run last first).
	t.Cleanup(func() {
		if u.uid > 0 {
			if left := unprivKill(u.uid); len(left) > 0 {
				t.Errorf("processes of %s (uid %d) survive SIGKILL: %v", u.name, u.uid, left)
			}
		}
		if out, err := exec.Command(userdel, u.name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", u.name, err, out)
		}
	})
	pw, err := user.Lookup(u.name)
	if err != nil {
		t.Fatal(err)
	}
	u.uid, _ = strconv.Atoi(pw.Uid)
	u.gid, _ = strconv.Atoi(pw.Gid)
	if u.uid <= 0 {
		t.Fatalf("useradd made %s with uid %q", u.name, pw.Uid)
	}
	for _, d := range []string{u.home, u.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// den runs den with args as the user.
func (u *unprivUser) den(t *testing.T, args ...string) Result {
	t.Helper()
	return u.run(t, u.bin, args...)
}

// run runs name with args as the user, with standard input /dev/null
// and only the environment set here, and fails the test if it runs
// longer than RunBound.
func (u *unprivUser) run(t *testing.T, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = u.home
	cmd.Env = []string{
		"HOME=" + u.home, "TMPDIR=" + u.tmp, "PATH=" + os.Getenv("PATH"), "CI=" + os.Getenv("CI"),
		"DEN_HOME=" + filepath.Join(u.home, "den"), "XDG_CONFIG_HOME=" + filepath.Join(u.home, "config"),
		unprivEnv + "=1",
	}
	// No supplementary groups: the user's own gid only.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}},
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: -1}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s as %s: still running after %v, killed\n%v", name, quote(args), u.name, RunBound, r)
	case errors.Is(err, exec.ErrWaitDelay):
		t.Fatalf("%s %s as %s: exited but left a process holding its output open\n%v", name, quote(args), u.name, r)
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("%s %s as %s: %v", name, quote(args), u.name, err)
	}
	return r
}

// unprivNeedSbin is sandboxtest.Need for tools that live in sbin, which
// a root shell's PATH may lack.
func unprivNeedSbin(t *testing.T, tool, pkg string) string {
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

// unprivProcs lists the host processes that have uid as their real,
// effective or saved user id, zombies included.
func unprivProcs(uid int) []int {
	want := strconv.Itoa(uid)
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 4 && f[0] == "Uid:" {
				if f[1] == want || f[2] == want || f[3] == want {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// unprivRunning is unprivProcs without zombies.
func unprivRunning(uid int) []int {
	var out []int
	for _, pid := range unprivProcs(uid) {
		if !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// unprivKill kills every process of uid until none runs, for at most
// MaxPolls polls, and returns what still runs.
func unprivKill(uid int) []int {
	var left []int
	for range MaxPolls {
		if left = unprivRunning(uid); len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(PollInterval)
	}
	return left
}

func unprivCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func unprivTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
