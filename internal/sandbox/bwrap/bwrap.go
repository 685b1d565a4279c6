// Package bwrap is the bubblewrap sandbox backend: Linux user, mount,
// pid, ipc and uts namespaces (and net when the policy is off), every
// capability dropped, and den's seccomp filter.
//
// den maps the sandbox's user namespace itself (bwrap waits on
// --userns-block-fd): as root a full 65536-id identity range, so that
// package managers that switch users work; as an ordinary user the
// user's own uid and gid as root. While bwrap waits, den also places the
// sandbox's first process in its control group and sets its process
// limit, so nothing inside ever runs unconstrained.
package bwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/seccomp"
)

// MinVersion is the oldest bubblewrap den runs with: --userns-block-fd,
// --info-fd, --perms and --die-with-parent all exist from 0.4, and
// Debian 12 ships 0.8.
const MinVersion = "0.4.0"

// Backend starts sandboxes with bwrap.
type Backend struct {
	path string
	uid  int
	gid  int

	once    sync.Once // guards version and verErr
	version string
	verErr  error
}

var _ sandbox.Backend = (*Backend)(nil)

// New finds bwrap (path "" looks it up on PATH). Its version is checked
// by Check and when a start fails, not on every start: running
// `bwrap --version` costs as much as a sandbox.
func New(path string) (*Backend, error) {
	if path == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, fmt.Errorf("%w: bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)", sandbox.ErrUnavailable)
		}
		path = p
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%w: %s is not an executable bwrap: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or fix [sandbox] bwrap in the config", sandbox.ErrUnavailable, path)
	}
	return &Backend{path: path, uid: os.Getuid(), gid: os.Getgid()}, nil
}

// checkVersion runs `bwrap --version` once and refuses a bwrap older
// than MinVersion.
func (b *Backend) checkVersion() (string, error) {
	b.once.Do(func() {
		v, err := Version(b.path)
		switch {
		case err != nil:
			b.verErr = fmt.Errorf("%w: %v: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or fix [sandbox] bwrap in the config", sandbox.ErrUnavailable, err)
		case versionLess(v, MinVersion):
			b.verErr = fmt.Errorf("%w: bwrap %s is older than %s: upgrade bubblewrap", sandbox.ErrUnavailable, v, MinVersion)
		}
		b.version = v
	})
	return b.version, b.verErr
}

// Name is "bwrap".
func (b *Backend) Name() string { return "bwrap" }

// Tier is namespaces.
func (b *Backend) Tier() sandbox.Tier { return sandbox.TierNamespaces }

// Path and Version describe the bwrap in use.
func (b *Backend) Path() string { return b.path }
func (b *Backend) Version() string {
	v, _ := b.checkVersion()
	return v
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

// Version runs `bwrap --version`.
func Version(path string) (string, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("bwrap --version: %w", err)
	}
	m := versionRE.FindString(string(out))
	if m == "" {
		return "", fmt.Errorf("bwrap --version: unexpected output %q", strings.TrimSpace(string(out)))
	}
	return m, nil
}

func versionLess(a, b string) bool {
	pa, pb := versionRE.FindStringSubmatch(a), versionRE.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

// Args returns bwrap's arguments for spec, before the command. Files
// are passed as fd 3 (user namespace block), 4 (info) and 5 (seccomp).
func (b *Backend) Args(spec *sandbox.Spec, cmd *sandbox.Cmd) []string {
	a := []string{
		"--unshare-user", "--userns-block-fd", "3", "--info-fd", "4", "--seccomp", "5",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if !spec.Network {
		a = append(a, "--unshare-net")
	}
	host := spec.Hostname
	if host == "" {
		host = "den"
	}
	a = append(a, "--hostname", host, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--bind", spec.Rootfs, "/",
		"--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--tmpfs", "/tmp")
	if spec.Network {
		// The host's resolver configuration, fresh at every start.
		if fi, err := os.Stat("/etc/resolv.conf"); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf")
		}
	}
	for _, m := range spec.Binds {
		op := "--bind"
		if m.ReadOnly {
			op = "--ro-bind"
		}
		a = append(a, op, m.Host, m.Guest)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = "/"
	}
	a = append(a, "--chdir", dir, "--")
	return append(a, cmd.Args...)
}

// Start starts a sandbox.
func (b *Backend) Start(ctx context.Context, spec *sandbox.Spec, cmd *sandbox.Cmd) (sandbox.Process, error) {
	if fi, err := os.Stat(spec.Rootfs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("bwrap: rootfs %s: not a directory", spec.Rootfs)
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer blockR.Close()
	defer blockW.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer infoR.Close()
	filter, err := seccomp.File()
	if err != nil {
		infoW.Close()
		return nil, fmt.Errorf("bwrap: seccomp: %w", err)
	}
	defer filter.Close()

	c := exec.Command(b.path, b.Args(spec, cmd)...)
	c.Env = cmd.Env
	if c.Env == nil {
		c.Env = []string{}
	}
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.ExtraFiles = []*os.File{blockR, infoW, filter}
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := c.Start(); err != nil {
		infoW.Close()
		return nil, fmt.Errorf("bwrap: start: %w", err)
	}
	infoW.Close()
	p := &process{cmd: c, waited: make(chan struct{})}
	go func() {
		p.waitErr = c.Wait()
		close(p.waited)
	}()
	child, err := readInfo(infoR)
	if err != nil {
		p.Kill()
		<-p.waited
		if _, verr := b.checkVersion(); verr != nil {
			return nil, verr
		}
		return nil, fmt.Errorf("%w: bwrap: %v (exit: %v)", sandbox.ErrUnavailable, err, p.waitErr)
	}
	p.child = child
	if err := b.setup(child, spec); err != nil {
		p.Kill()
		<-p.waited
		return nil, err
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		p.Kill()
		<-p.waited
		return nil, fmt.Errorf("bwrap: release: %w", err)
	}
	if ns, ok := sandbox.PidNS(child); ok {
		p.ns = ns
	}
	return p, nil
}

// setup maps the user namespace of bwrap's child and constrains it,
// while bwrap waits.
func (b *Backend) setup(child int, spec *sandbox.Spec) error {
	base := "/proc/" + strconv.Itoa(child)
	if spec.Cgroup != nil {
		if err := spec.Cgroup.Add(child); err != nil {
			return fmt.Errorf("bwrap: cgroup: %w", err)
		}
	}
	if b.uid == 0 {
		if err := os.WriteFile(base+"/uid_map", []byte("0 0 65536\n"), 0); err != nil {
			return fmt.Errorf("bwrap: uid map: %w", err)
		}
		if err := os.WriteFile(base+"/gid_map", []byte("0 0 65536\n"), 0); err != nil {
			return fmt.Errorf("bwrap: gid map: %w", err)
		}
	} else {
		if err := os.WriteFile(base+"/setgroups", []byte("deny"), 0); err != nil {
			return fmt.Errorf("bwrap: setgroups: %w", err)
		}
		if err := os.WriteFile(base+"/uid_map", fmt.Appendf(nil, "0 %d 1\n", b.uid), 0); err != nil {
			return fmt.Errorf("bwrap: uid map: %w", err)
		}
		if err := os.WriteFile(base+"/gid_map", fmt.Appendf(nil, "0 %d 1\n", b.gid), 0); err != nil {
			return fmt.Errorf("bwrap: gid map: %w", err)
		}
		// For an ordinary user the process count is also bounded by
		// RLIMIT_NPROC, counted per user namespace; root is exempt
		// from it, and relies on the control group.
		if spec.Limits.Pids > 0 {
			if err := limitProcs(child, uint64(spec.Limits.Pids)); err != nil {
				return fmt.Errorf("bwrap: process limit: %w", err)
			}
		}
	}
	return nil
}

// limitProcs sets pid's RLIMIT_NPROC to n, or to its hard limit when
// that is lower: an ordinary user cannot raise a hard limit, and a
// tighter bound than asked for is still a bound.
func limitProcs(pid int, n uint64) error {
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, nil, &cur); err != nil {
		return err
	}
	n = min(n, cur.Max)
	return unix.Prlimit(pid, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}, nil)
}

func readInfo(r io.Reader) (int, error) {
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&info); err != nil {
		return 0, fmt.Errorf("sandbox did not start")
	}
	if info.ChildPid <= 0 {
		return 0, fmt.Errorf("no child pid in bwrap info")
	}
	return info.ChildPid, nil
}

type process struct {
	cmd     *exec.Cmd
	child   int    // host pid of pid 1 inside the sandbox
	ns      string // the sandbox's pid namespace
	waited  chan struct{}
	waitErr error
	once    sync.Once
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

// Members lists the host pids in the sandbox's pid namespace.
func (p *process) Members() ([]int, error) {
	if p.ns == "" {
		return nil, fmt.Errorf("bwrap: sandbox not running")
	}
	var out []int
	for _, pid := range sandbox.AllPids() {
		if ns, ok := sandbox.PidNS(pid); ok && ns == p.ns {
			out = append(out, pid)
		}
	}
	return out, nil
}

func (p *process) HostPid(inner int) (int, bool) {
	members, err := p.Members()
	if err != nil {
		return 0, false
	}
	for _, pid := range members {
		if n, ok := sandbox.NSpid(pid); ok && n == inner {
			return pid, true
		}
	}
	return 0, false
}

// Kill ends pid 1 of the sandbox's pid namespace, which makes the kernel
// end every other process in it; bwrap then reaps it and exits by itself
// (killing bwrap first would leave its child to the host's init as a
// zombie). A bwrap that does not exit within a few seconds is killed.
func (p *process) Kill() error {
	p.once.Do(func() {
		if p.child > 0 {
			unix.Kill(p.child, unix.SIGKILL)
		} else {
			unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		}
		go func() {
			select {
			case <-p.waited:
			case <-time.After(3 * time.Second):
				unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
				p.cmd.Process.Kill()
			}
		}()
	})
	return nil
}

func (p *process) Wait() error {
	<-p.waited
	return p.waitErr
}

// Check reports whether bwrap can start sandboxes here: the binary and
// its version, user namespaces (including Ubuntu's AppArmor restriction
// on unprivileged ones), seccomp, and a real trial start.
func (b *Backend) Check(ctx context.Context) []sandbox.Check {
	var out []sandbox.Check
	if v, err := b.checkVersion(); err != nil {
		out = append(out, sandbox.Check{Name: "bwrap", Fatal: true, Detail: err.Error(), Fix: "install bubblewrap " + MinVersion + " or newer"})
	} else {
		out = append(out, sandbox.Check{Name: "bwrap", OK: true, Detail: b.path + " " + v})
	}
	out = append(out, userNSChecks(b.uid)...)
	out = append(out, seccompCheck())
	trial := exec.CommandContext(ctx, b.path, "--unshare-all", "--unshare-user", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL", "true")
	msg, err := trial.CombinedOutput()
	c := sandbox.Check{Name: "bwrap trial start", OK: err == nil, Fatal: true}
	if err != nil {
		c.Detail = strings.TrimSpace(string(msg) + " " + err.Error())
		c.Fix = trialFix(string(msg))
	} else {
		c.Detail = "a user-namespace sandbox started and exited cleanly"
	}
	return append(out, c)
}

func trialFix(msg string) string {
	switch {
	case strings.Contains(msg, "Permission denied") || strings.Contains(msg, "Operation not permitted"):
		return "user namespaces are refused; on Ubuntu 24.04+ allow them for bwrap with an AppArmor profile (see docs/sandbox.md) or run `sysctl kernel.apparmor_restrict_unprivileged_userns=0`; elsewhere check kernel.unprivileged_userns_clone and user.max_user_namespaces"
	case strings.Contains(msg, "No space left") || strings.Contains(msg, "max_user_namespaces"):
		return "raise user.max_user_namespaces (sysctl -w user.max_user_namespaces=15000)"
	}
	return "see the message above; den will not run commands until a sandbox can start"
}

func readSysctl(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func userNSChecks(uid int) []sandbox.Check {
	var out []sandbox.Check
	c := sandbox.Check{Name: "user namespaces", OK: true, Fatal: true}
	if v, ok := readSysctl("/proc/sys/user/max_user_namespaces"); ok {
		c.Detail = "user.max_user_namespaces=" + v
		if v == "0" {
			c.OK = false
			c.Fix = "sysctl -w user.max_user_namespaces=15000"
		}
	} else {
		c.OK = false
		c.Detail = "the kernel has no user namespaces"
		c.Fix = "use a kernel with CONFIG_USER_NS, or the proot backend (no isolation)"
	}
	out = append(out, c)
	if uid != 0 {
		if v, ok := readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" {
			out = append(out, sandbox.Check{Name: "unprivileged user namespaces", Fatal: true,
				Detail: "kernel.unprivileged_userns_clone=0",
				Fix:    "sysctl -w kernel.unprivileged_userns_clone=1"})
		}
		if v, ok := readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
			out = append(out, sandbox.Check{Name: "AppArmor user-namespace restriction", OK: true,
				Detail: "kernel.apparmor_restrict_unprivileged_userns=1: bwrap needs an AppArmor profile that allows userns",
				Fix:    "install an AppArmor profile for bwrap with `userns,` (see docs/sandbox.md)"})
		}
	}
	return out
}

func seccompCheck() sandbox.Check {
	c := sandbox.Check{Name: "seccomp", Fatal: true}
	b, err := os.ReadFile("/proc/self/status")
	if err == nil && strings.Contains(string(b), "\nSeccomp:") {
		c.OK = true
		c.Detail = fmt.Sprintf("filter mode available; den denies %d syscalls", len(seccomp.Denied()))
		return c
	}
	c.Detail = "the kernel does not report seccomp"
	c.Fix = "use a kernel with CONFIG_SECCOMP_FILTER"
	return c
}
