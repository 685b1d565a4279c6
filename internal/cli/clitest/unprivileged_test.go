package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/cli"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

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
		t.Fatalf("den exec --rootfs busybox -- id -u as %s: want \"0\" and exit 0, got %v", u.Name, r)
	}

	t.Run("Doctor", func(t *testing.T) {
		r := u.den(t, "doctor")
		if r.Code != 0 || strings.Contains(r.Stdout, "FAIL") {
			t.Errorf("den doctor as %s: want exit 0 and no FAIL, got %v", u.Name, r)
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
			t.Errorf("den doctor --json as %s: want exit 0, ok and tier namespaces, got %+v\n%v", u.Name, rep, r)
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
					t.Errorf("cgroups as %s, which has none delegated: want a non-fatal warning that says why and names RLIMIT_NPROC, got %+v", u.Name, c)
				}
			case "computer start":
				if !c.OK || !strings.Contains(c.Detail, "uid 0") {
					t.Errorf("computer start as %s: want a start as uid 0, got %+v", u.Name, c)
				}
			}
		}
		for _, name := range []string{"resource limits (cgroups)", "computer start"} {
			if !found[name] {
				t.Errorf("den doctor --json as %s has no %q check:\n%s", u.Name, name, r.Stdout)
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

	t.Run("Browser", func(t *testing.T) {
		// The agent's browser runs for an ordinary user too, its
		// profile that user's.
		sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
		fake := llmtest.NewAnthropic(t,
			llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "browser_use",
				Input: `{"action":"navigate","url":"data:text/html,<title>Mine</title><button onclick=\"document.title='Clicked'\">Press</button>"}`}}},
			llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "browser_use", Input: `{"action":"click","index":1}`}}},
			llmtest.Turn{Text: "done"})
		u.env = []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
		defer func() { u.env = nil }()
		if r := u.den(t, "run", "press it"); r.Code != 0 {
			t.Fatalf("den run as %s: %v", u.Name, r)
		}
		reqs := fake.Requests()
		if len(reqs) != 3 || !strings.Contains(string(reqs[1].Body), `[1] button \"Press\"`) || !strings.Contains(string(reqs[2].Body), "Clicked") {
			t.Errorf("the browser's results as %s: %d requests", u.Name, len(reqs))
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(u.Home, "den", "agents", "default", "browser", "profile"), &st); err != nil || int(st.Uid) != u.UID {
			t.Errorf("the profile: %v, uid %d, want %d", err, st.Uid, u.UID)
		}
	})
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
	for _, pid := range u.Procs() {
		before[pid] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	peak := 0
	wg.Go(func() {
		for {
			n := 0
			for _, pid := range u.Procs() {
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
		t.Errorf("fork bomb as %s: %d processes at once, above the sandbox's limit of %d", u.Name, peak, cli.DefaultPids)
	}
	t.Logf("fork bomb as %s: at most %d processes seen", u.Name, peak)

	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("the test cannot fork after the fork bomb: %v", err)
	}
	if r := u.run(t, "true"); r.Code != 0 {
		t.Errorf("%s cannot fork after the fork bomb: %v", u.Name, r)
	}
	var left []int
	for range MaxPolls {
		if left = u.Running(); len(left) == 0 {
			break
		}
		time.Sleep(PollInterval)
	}
	if len(left) > 0 {
		t.Errorf("after the fork bomb, %d processes of %s still run: %v", len(left), u.Name, left[:min(len(left), 20)])
	}
}

// unprivUser is a throwaway system user with den copied into its Dir,
// where it can run it; its DEN_HOME is in its Home.
type unprivUser struct {
	*sandboxtest.User
	bin string
	env []string // KEY=value added to what den runs with
}

// newUnprivUser makes a throwaway user and copies den where it can run
// it. It skips unless the test runs as root, and fails (CI=true) or
// skips when a tool is missing. Cleanup kills the user's processes,
// deletes it and removes its folders.
func newUnprivUser(t *testing.T) *unprivUser {
	t.Helper()
	su := sandboxtest.NewUser(t)
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	return &unprivUser{User: su, bin: su.Install(t, denBin, "den")}
}

// den runs den with args as the user.
func (u *unprivUser) den(t *testing.T, args ...string) Result {
	t.Helper()
	return u.run(t, u.bin, args...)
}

// run runs name with args as the user, with standard input /dev/null
// and only the environment set here and by sandboxtest.User.Command,
// and fails the test if it runs longer than RunBound.
func (u *unprivUser) run(t *testing.T, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	cmd := u.Command(ctx, name, args...)
	cmd.Env = append(cmd.Env,
		"DEN_HOME="+filepath.Join(u.Home, "den"), "XDG_CONFIG_HOME="+filepath.Join(u.Home, "config"))
	cmd.Env = append(cmd.Env, u.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: -1}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s as %s: still running after %v, killed\n%v", name, quote(args), u.Name, RunBound, r)
	case errors.Is(err, exec.ErrWaitDelay):
		t.Fatalf("%s %s as %s: exited but left a process holding its output open\n%v", name, quote(args), u.Name, r)
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("%s %s as %s: %v", name, quote(args), u.Name, err)
	}
	return r
}

func unprivTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestUnprivilegedUndoOtherUsers: den as an ordinary user with
// subordinate ids checkpoints a computer whose other users keep files
// unreadable to others (a 0700 folder of uid 100 holding a 0600 file of
// uid 1000, as apt's partial downloads are in a rootfs mmdebstrap
// built), and a restore gives them back to those users: den runs itself
// as its checkpoint helper, in a user namespace with the computer's ids.
func TestUnprivilegedUndoOtherUsers(t *testing.T) {
	u := newUnprivUser(t)
	sandboxtest.Need(t, "newuidmap", "uidmap")
	first := int(u.AddSubIDs(t))
	if r := u.den(t, "exec", "--rootfs", "busybox", "--", "mkdir", "-p", "/var/cache"); r.Code != 0 {
		t.Fatalf("den exec as %s: %v", u.Name, r)
	}
	// The computer's root has no capabilities: its other users' files
	// come with the rootfs, made here as root would have made them.
	dir := filepath.Join(u.Home, "den", "agents", "default", "rootfs", "var", "cache", "partial")
	file := filepath.Join(dir, "pkg.deb")
	for _, step := range []error{
		os.Mkdir(dir, 0o700), os.WriteFile(file, []byte("half\n"), 0o600),
		os.Lchown(file, first+999, first+999), os.Lchown(dir, first+99, first+65533),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	r := u.den(t, "computer", "checkpoint")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "checkpoint 1 ") {
		t.Fatalf("den computer checkpoint as %s: %v", u.Name, r)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if r := u.den(t, "computer", "restore", "1"); r.Code != 0 || strings.Contains(r.Stdout, "not given") {
		t.Fatalf("den computer restore 1 as %s: %v", u.Name, r)
	}
	for _, c := range []struct {
		path     string
		uid, gid int
		mode     uint32
	}{{dir, first + 99, first + 65533, 0o700}, {file, first + 999, first + 999, 0o600}} {
		var st unix.Stat_t
		if err := unix.Lstat(c.path, &st); err != nil || int(st.Uid) != c.uid || int(st.Gid) != c.gid || st.Mode&0o7777 != c.mode {
			t.Errorf("after the restore, %s: %v, owner %d:%d mode %o, want %d:%d %o", c.path, err, st.Uid, st.Gid, st.Mode&0o7777, c.uid, c.gid, c.mode)
		}
	}
	// As the computer sees it (its root may not look inside).
	r = u.den(t, "exec", "--", "stat", "-c", "%u:%g %a", "/var/cache/partial")
	if r.Code != 0 || r.Stdout != "100:65534 700\n" {
		t.Errorf("the folder in the computer: %v", r)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "half\n" {
		t.Errorf("after the restore: %q, %v", b, err)
	}
}
