package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
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
)

// UnprivilegedEnv is set in the environment of every command a User
// runs, so that a test binary run again as the user never makes users
// itself: NewUser skips when it is set.
const UnprivilegedEnv = "DEN_TEST_UNPRIVILEGED"

// User is a throwaway system account for tests of den's unprivileged
// path, with folders under one temporary folder the test removes: Dir is
// readable by the user, Home (HOME) and Tmp (TMPDIR, inside Home) are
// its own.
type User struct {
	Name      string // den-test-<random>
	UID, GID  int
	Dir       string
	Home, Tmp string
}

// NewUser makes a throwaway user. It skips unless the test runs as root
// and UnprivilegedEnv is unset, and fails (CI=true) or skips when
// useradd or userdel is missing. Cleanup kills every process of the
// user, deletes it and removes its folders.
func NewUser(t testing.TB) *User {
	t.Helper()
	if os.Getenv(UnprivilegedEnv) != "" {
		t.Skipf("%s is set: this run already is the throwaway user's", UnprivilegedEnv)
	}
	if os.Getuid() != 0 {
		t.Skipf("the unprivileged tests make a throwaway user, which needs root (this is uid %d); run them as root", os.Getuid())
	}
	useradd := needSbin(t, "useradd", "passwd")
	userdel := needSbin(t, "userdel", "passwd")

	dir, err := os.MkdirTemp("", "den-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// What the user's runs left read-only goes too.
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
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
	u := &User{Name: "den-test-" + hex.EncodeToString(b), UID: -1, Dir: dir,
		Home: filepath.Join(dir, "home"), Tmp: filepath.Join(dir, "home", "tmp")}
	if out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", u.Name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", u.Name, err, out)
	}
	// Runs before the folder is removed (cleanups run last first).
	t.Cleanup(func() {
		if u.UID > 0 {
			if left := u.kill(); len(left) > 0 {
				t.Errorf("processes of %s (uid %d) survive SIGKILL: %v", u.Name, u.UID, left)
			}
		}
		if out, err := exec.Command(userdel, u.Name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", u.Name, err, out)
		}
	})
	pw, err := user.Lookup(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	u.UID, _ = strconv.Atoi(pw.Uid)
	u.GID, _ = strconv.Atoi(pw.Gid)
	if u.UID <= 0 {
		t.Fatalf("useradd made %s with uid %q", u.Name, pw.Uid)
	}
	for _, d := range []string{u.Home, u.Tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, u.UID, u.GID); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// Command returns name with args, to run as the user in Home, with its
// own gid and no supplementary groups, and with only HOME, TMPDIR, PATH,
// CI and UnprivilegedEnv in the environment; append to cmd.Env for
// more. Ending ctx kills it, and Wait gives up on its output 10 s after
// it exits.
func (u *User) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = u.Home
	cmd.Env = []string{
		"HOME=" + u.Home, "TMPDIR=" + u.Tmp, "PATH=" + os.Getenv("PATH"),
		"CI=" + os.Getenv("CI"), UnprivilegedEnv + "=1",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}},
	}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// Install copies the executable src into Dir as name, where the user
// can run it, and returns its path.
func (u *User) Install(t testing.TB, src, name string) string {
	t.Helper()
	dst := filepath.Join(u.Dir, name)
	if err := copyFile(src, dst, 0o755); err != nil {
		t.Fatalf("install %s as %s: %v", src, dst, err)
	}
	return dst
}

// Procs lists the host processes that have the user's uid as their
// real, effective or saved user id, zombies included.
func (u *User) Procs() []int {
	want := strconv.Itoa(u.UID)
	var out []int
	for _, pid := range sandbox.AllPids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
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

// Running is Procs without zombies.
func (u *User) Running() []int {
	return running(u.Procs())
}

// kill kills every process of the user until none runs, for at most
// about 30 s, and returns what still runs.
func (u *User) kill() []int {
	var left []int
	for range 600 {
		if left = u.Running(); len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

// needSbin is Need for tools that live in sbin, which a root shell's
// PATH may lack.
func needSbin(t testing.TB, tool, pkg string) string {
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
	return Need(t, tool, pkg)
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

// AddSubIDs gives the user a range of 65536 subordinate uids and gids in
// /etc/subuid and /etc/subgid (usermod), as a distribution's useradd
// does for a person's account, and returns its first id. The range is
// removed in cleanup.
func (u *User) AddSubIDs(t testing.TB) uint32 {
	t.Helper()
	usermod := needSbin(t, "usermod", "passwd")
	// A range no account and no other range uses: below den's own
	// ranges, from the user's uid.
	first := uint32(0x60000000) + uint32(u.UID%4096)*65536
	r := fmt.Sprintf("%d-%d", first, first+65535)
	if out, err := exec.Command(usermod, "--add-subuids", r, "--add-subgids", r, u.Name).CombinedOutput(); err != nil {
		t.Fatalf("usermod --add-subuids %s %s: %v: %s", r, u.Name, err, out)
	}
	t.Cleanup(func() {
		exec.Command(usermod, "--del-subuids", r, "--del-subgids", r, u.Name).Run()
	})
	return first
}
