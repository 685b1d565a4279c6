// Package proot is the PRoot backend, for hosts without user namespaces
// (Android/Termux, locked-down containers). PRoot translates paths with
// ptrace; it isolates nothing: processes inside can reach every host
// file the user can, see host processes and use the network. den never
// picks it on its own, and den doctor reports it as "no isolation".
//
// Because PRoot cannot enforce them, read-only user mounts and a
// network policy of "off" are refused rather than silently ignored.
//
// PRoot's tracees outlive a killed PRoot, so every sandbox runs under a
// reaper: den's own binary started again in reaper mode (see
// MaybeReaper), a child subreaper that dies with den and takes every
// process below it along.
package proot

import (
	"context"
	"den.dev/den/internal/sandbox/launch"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
)

// Backend starts sandboxes with proot.
type Backend struct {
	path    string
	version string
	self    string // den's own executable, run in reaper mode
}

var _ sandbox.Backend = (*Backend)(nil)

// New finds proot (path "" looks it up on PATH).
func New(path string) (*Backend, error) {
	if path == "" {
		p, err := exec.LookPath("proot")
		if err != nil {
			return nil, fmt.Errorf("%w: proot not found: install proot (Debian/Ubuntu: apt-get install proot)", sandbox.ErrUnavailable)
		}
		path = p
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: proot --version: %v", sandbox.ErrUnavailable, err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("proot: find own executable: %w", err)
	}
	return &Backend{path: path, version: parseVersion(string(out)), self: self}, nil
}

func parseVersion(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 0 && f[0] >= '0' && f[0] <= '9' && strings.Contains(f, ".") {
			return strings.TrimRight(f, ",")
		}
	}
	return "unknown"
}

// Name is "proot".
func (b *Backend) Name() string { return "proot" }

// Tier is none: PRoot is not a security boundary.
func (b *Backend) Tier() sandbox.Tier { return sandbox.TierNone }

// Check reports what the proot backend gives.
func (b *Backend) Check(ctx context.Context) []sandbox.Check {
	return []sandbox.Check{
		{Name: "proot", OK: true, Detail: b.path + " " + b.version},
		{Name: "isolation", OK: false, Detail: "proot is path translation only: commands can read and write your files, see your processes and use the network",
			Fix: "use the bwrap backend where user namespaces are available"},
	}
}

// Start starts a sandbox.
func (b *Backend) Start(ctx context.Context, spec *sandbox.Spec, cmd *sandbox.Cmd) (sandbox.Process, error) {
	if !spec.Network {
		return nil, fmt.Errorf("%w: proot cannot turn the network off; set the agent's network to on, or use the bwrap backend", sandbox.ErrUnavailable)
	}
	if spec.Egress == nil || !spec.Egress.Open() {
		return nil, fmt.Errorf("%w: proot shares the host's network and cannot enforce an egress policy; set the agent's egress to \"open\", or use the bwrap backend", sandbox.ErrUnavailable)
	}
	for _, m := range spec.Binds {
		if m.ReadOnly && !m.Internal {
			return nil, fmt.Errorf("%w: proot cannot enforce the read-only mount %s; use the bwrap backend or mount it read-write", sandbox.ErrUnavailable, m)
		}
	}
	if fi, err := os.Stat(spec.Rootfs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("proot: rootfs %s: not a directory", spec.Rootfs)
	}
	tmp, err := os.MkdirTemp("", "den-proot-tmp-")
	if err != nil {
		return nil, fmt.Errorf("proot: tmp: %w", err)
	}
	os.Chmod(tmp, os.ModeSticky|0o777)
	args := []string{"-0", "-r", spec.Rootfs, "-b", "/proc", "-b", "/dev", "-b", "/sys", "-b", tmp + ":/tmp"}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		args = append(args, "-b", "/etc/resolv.conf")
	}
	for _, m := range spec.Binds {
		args = append(args, "-b", m.Host+":"+m.Guest)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = "/"
	}
	args = append(args, "-w", dir)
	args = append(args, cmd.Args...)

	blockR, blockW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("proot: pipe: %w", err)
	}
	defer blockR.Close()
	defer blockW.Close()
	c := exec.Command(b.self, append([]string{reaperArg, b.path}, args...)...)
	// The reaper removes the sandbox's /tmp even when den was killed; it
	// takes the path out of the environment before starting proot.
	c.Env = append(append([]string{}, cmd.Env...), tmpEnv+"="+tmp)
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.ExtraFiles = []*os.File{blockR}
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := launch.Start(c); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("proot: start: %w", err)
	}
	p := &process{cmd: c, tmp: tmp, waited: make(chan struct{})}
	go func() {
		p.waitErr = c.Wait()
		// The reaper has ended everything inside: nothing uses /tmp.
		os.RemoveAll(tmp)
		close(p.waited)
	}()
	if spec.Cgroup != nil {
		if err := spec.Cgroup.Add(c.Process.Pid); err != nil {
			p.Kill()
			p.Wait()
			return nil, fmt.Errorf("proot: cgroup: %w", err)
		}
	}
	if spec.Limits.Pids > 0 && os.Getuid() != 0 {
		lim := unix.Rlimit{Cur: uint64(spec.Limits.Pids), Max: uint64(spec.Limits.Pids)}
		unix.Prlimit(c.Process.Pid, unix.RLIMIT_NPROC, &lim, nil)
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		p.Kill()
		p.Wait()
		return nil, fmt.Errorf("proot: release: %w", err)
	}
	return p, nil
}

type process struct {
	cmd     *exec.Cmd
	tmp     string
	waited  chan struct{}
	waitErr error
	once    sync.Once
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

// Members lists every process below the reaper (orphans included: the
// reaper is their subreaper).
func (p *process) Members() ([]int, error) {
	var procs []sandbox.ProcInfo
	for _, pid := range sandbox.AllPids() {
		if pi, ok := sandbox.ReadProc(pid); ok {
			procs = append(procs, pi)
		}
	}
	return sandbox.Descendants(procs, p.Pid()), nil
}

// HostPid is the identity: proot has no pid namespace.
func (p *process) HostPid(inner int) (int, bool) {
	members, _ := p.Members()
	for _, pid := range members {
		if pid == inner {
			return pid, true
		}
	}
	return 0, false
}

// Kill asks the reaper to end everything below it.
func (p *process) Kill() error {
	p.once.Do(func() {
		unix.Kill(p.Pid(), unix.SIGTERM)
	})
	return nil
}

func (p *process) Wait() error {
	<-p.waited
	return p.waitErr
}
