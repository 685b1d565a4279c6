// Package bwrap is the bubblewrap sandbox backend: Linux user, mount,
// pid, ipc and uts namespaces (and net when the policy is off), every
// capability dropped, and den's seccomp filter.
//
// The sandbox's user namespace holds only the computer's own ids
// (Spec.IDs): bwrap makes it while its child waits on
// --userns-block-fd, and den writes the map (as root, directly; as an
// ordinary user with subordinate ids, through newuidmap and newgidmap;
// otherwise the user's own uid alone). As root, den runs bwrap itself as
// root inside's host uid, an unprivileged id, so that nothing in the
// namespace is ever host uid 0; bind sources are staged for it (see
// StageBase) and user mounts are idmapped so that what the computer
// writes there belongs to the folder's owner. While bwrap waits, den
// also places the sandbox's first process in its control group and
// sets its process limit, so nothing inside ever runs unconstrained.
//
// Global kernel interfaces stay out of reach whatever the uid: /proc/sys,
// /proc/irq, /proc/bus, /proc/fs and /proc/sysrq-trigger are read-only
// inside, and /proc/kcore, /proc/keys, /proc/kmsg, /proc/timer_list,
// /proc/sched_debug and /proc/acpi are masked.
package bwrap

import (
	"context"
	"den.dev/den/internal/sandbox/launch"
	"encoding/json"
	"errors"
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
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/netns"
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

	owners idmap.OwnerNS // user namespaces of idmapped user mounts, as root
	log    func(string)  // what den did not expect, for the log
	sweep  sync.Once     // stale staging folders, once per backend

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

// procReadOnly are /proc entries that change the whole kernel; they
// are bound read-only from the host's /proc over the sandbox's own.
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}

// procMasked are /proc entries that tell about the host kernel or its
// keys and have no use inside; files are covered with /dev/null,
// folders with an empty read-only tmpfs.
var procMasked = []string{"kcore", "keys", "kmsg", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi"}

// Args returns bwrap's arguments for spec, before the command. Files
// are passed as fd 3 (user namespace block), 4 (info), 5 (seccomp) and,
// with the network on, 6 (the computer's /etc/resolv.conf, through
// netns.Gate).
// Sources are used as given: Start stages them first when den is root.
func (b *Backend) Args(spec *sandbox.Spec, cmd *sandbox.Cmd) []string {
	// The computer always has a network namespace of its own: with the
	// network on, den redirects everything in it to its egress proxy
	// (see Start), so the host's loopback and abstract sockets stay out
	// of reach and nothing leaves but through den.
	a := []string{
		"--unshare-user", "--userns-block-fd", "3", "--info-fd", "4", "--seccomp", "5",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
	}
	host := spec.Hostname
	if host == "" {
		host = "den"
	}
	a = append(a, "--hostname", host, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--bind", spec.Rootfs, "/",
		"--proc", "/proc")
	for _, name := range procReadOnly {
		if p := "/proc/" + name; exists(p) {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, name := range procMasked {
		p := "/proc/" + name
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			a = append(a, "--perms", "0555", "--tmpfs", p, "--remount-ro", p)
		default:
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	a = append(a, "--dev", "/dev", "--perms", "1777")
	if spec.Limits.TmpBytes > 0 {
		a = append(a, "--size", strconv.FormatInt(spec.Limits.TmpBytes, 10))
	}
	a = append(a, "--tmpfs", "/tmp")
	if spec.Network {
		// The resolver of the computer's own network, read from fd 6:
		// the netns.Gate that holds the sandbox until it is attached.
		a = append(a, "--ro-bind-data", "6", "/etc/resolv.conf")
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

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ids returns the map a sandbox of spec runs with: spec.IDs, or for an
// ordinary user without one, the user's own ids. As root a map is
// required, and none may make root inside host root.
func (b *Backend) ids(spec *sandbox.Spec) (sandbox.IDMap, error) {
	m := spec.IDs
	if len(m.UIDs) == 0 && len(m.GIDs) == 0 {
		if b.uid == 0 {
			return m, fmt.Errorf("%w: bwrap: no id map for the computer: as root, den never runs a computer whose root is host root", sandbox.ErrUnavailable)
		}
		m = sandbox.IDMap{
			UIDs: []sandbox.IDRange{{Inside: 0, Host: uint32(b.uid), Count: 1}},
			GIDs: []sandbox.IDRange{{Inside: 0, Host: uint32(b.gid), Count: 1}},
		}
	}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("%w: bwrap: %v", sandbox.ErrUnavailable, err)
	}
	if b.uid != 0 && !m.Helper {
		if len(m.UIDs) != 1 || m.UIDs[0].Count != 1 || int(m.UIDs[0].Host) != b.uid || len(m.GIDs) != 1 || m.GIDs[0].Count != 1 || int(m.GIDs[0].Host) != b.gid {
			return m, fmt.Errorf("%w: bwrap: an ordinary user maps only its own uid and gid without newuidmap", sandbox.ErrUnavailable)
		}
	}
	return m, nil
}

// Start starts a sandbox.
func (b *Backend) Start(ctx context.Context, spec *sandbox.Spec, cmd *sandbox.Cmd) (sandbox.Process, error) {
	if fi, err := os.Stat(spec.Rootfs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("bwrap: rootfs %s: not a directory", spec.Rootfs)
	}
	ids, err := b.ids(spec)
	if err != nil {
		return nil, err
	}
	rootUID, rootGID, _ := ids.Root()
	var st *stage
	if b.uid == 0 {
		b.sweep.Do(sweepStages)
		if spec, st, err = b.stageBinds(spec, rootUID, rootGID); err != nil {
			return nil, err
		}
	}
	p, err := b.start(ctx, spec, cmd, ids, rootUID, rootGID)
	if err != nil {
		st.release()
		return nil, err
	}
	p.stage = st
	return p, nil
}

func (b *Backend) start(ctx context.Context, spec *sandbox.Spec, cmd *sandbox.Cmd, ids sandbox.IDMap, rootUID, rootGID int) (*process, error) {
	if spec.Network && spec.Egress == nil {
		// Fail closed: a network nothing serves would be a network
		// nothing polices.
		return nil, fmt.Errorf("bwrap: the network is on but nothing serves it (no Spec.Egress)")
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
	c.Dir = "/"
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.ExtraFiles = []*os.File{blockR, infoW, filter}
	var gate *netns.Gate
	if spec.Network {
		if gate, err = netns.NewGate(); err != nil {
			infoW.Close()
			return nil, fmt.Errorf("bwrap: %w", err)
		}
		defer gate.Open()
		c.ExtraFiles = append(c.ExtraFiles, gate.File())
	}
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if b.uid == 0 {
		// bwrap, and the user namespace it makes, belong to root
		// inside's unprivileged host uid: host uid 0 is never in it.
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(rootUID), Gid: uint32(rootGID), Groups: []uint32{}}
	}
	if err := launch.Start(c); err != nil {
		infoW.Close()
		return nil, fmt.Errorf("bwrap: start: %w", err)
	}
	infoW.Close()
	if gate != nil {
		gate.File().Close()
	}
	p := &process{cmd: c, waited: make(chan struct{}), childFD: -1}
	go func() {
		p.waitErr = c.Wait()
		// bwrap has reaped its child: the pid may be another
		// process's from now on.
		p.mu.Lock()
		if p.childFD >= 0 {
			unix.Close(p.childFD)
			p.childFD = -1
		}
		p.gone = true
		p.mu.Unlock()
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
	p.mu.Lock()
	if !p.gone {
		p.child = child
		// A pidfd names this process and no later one with its pid.
		if fd, err := unix.PidfdOpen(child, 0); err == nil {
			p.childFD = fd
		}
	}
	p.mu.Unlock()
	if err := b.setup(child, spec, ids); err != nil {
		p.Kill()
		<-p.waited
		return nil, err
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		p.Kill()
		<-p.waited
		return nil, fmt.Errorf("bwrap: release: %w", err)
	}
	if gate != nil {
		if err := b.attach(ctx, p, gate, spec.Egress); err != nil {
			p.Kill()
			<-p.waited
			return nil, err
		}
	}
	if ns, ok := sandbox.PidNS(child); ok {
		p.ns = ns
	}
	return p, nil
}

// attach gives the sandbox its network, once bwrap has set up the
// loopback and before anything inside runs (the gate holds it there).
func (b *Backend) attach(ctx context.Context, p *process, gate *netns.Gate, egress sandbox.Egress) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := gate.Wait(wctx); err != nil {
		return fmt.Errorf("%w: bwrap: %v (exit: %v)", sandbox.ErrUnavailable, err, p.exitNow())
	}
	n, err := netns.Attach(wctx, p.child, netns.Options{})
	if err != nil {
		if errors.Is(err, netns.ErrUnavailable) {
			return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
		}
		return fmt.Errorf("bwrap: network: %w", err)
	}
	p.net, p.stopNet = n, egress.Serve(n.TCP, n.DNS)
	go func() {
		// The listeners hold the namespace: they go with the sandbox.
		<-p.waited
		p.closeNet()
	}()
	return gate.Open()
}

// setup maps the user namespace of bwrap's child and constrains it,
// while bwrap waits.
func (b *Backend) setup(child int, spec *sandbox.Spec, ids sandbox.IDMap) error {
	base := "/proc/" + strconv.Itoa(child)
	if spec.Cgroup != nil {
		if err := spec.Cgroup.Add(child); err != nil {
			return fmt.Errorf("bwrap: cgroup: %w", err)
		}
	}
	switch {
	case ids.Helper:
		if err := runHelper("newuidmap", child, ids.UIDs); err != nil {
			return err
		}
		if err := runHelper("newgidmap", child, ids.GIDs); err != nil {
			return err
		}
	default:
		if b.uid != 0 {
			// An ordinary user may map its one gid only with
			// setgroups denied.
			if err := os.WriteFile(base+"/setgroups", []byte("deny"), 0); err != nil {
				return fmt.Errorf("bwrap: setgroups: %w", err)
			}
		}
		if err := os.WriteFile(base+"/uid_map", []byte(sandbox.Lines(ids.UIDs)), 0); err != nil {
			return fmt.Errorf("bwrap: uid map: %w", err)
		}
		if err := os.WriteFile(base+"/gid_map", []byte(sandbox.Lines(ids.GIDs)), 0); err != nil {
			return fmt.Errorf("bwrap: gid map: %w", err)
		}
	}
	// The process count is also bounded by RLIMIT_NPROC, counted per
	// user in the sandbox's user namespace: a second bound beside the
	// control group, and the only one without cgroups.
	for _, l := range []struct {
		what     string
		resource int
		n        int64
	}{{"process limit", unix.RLIMIT_NPROC, spec.Limits.Pids}, {"file size limit", unix.RLIMIT_FSIZE, spec.Limits.DiskBytes}} {
		if l.n <= 0 {
			continue
		}
		err := lower(child, l.resource, uint64(l.n))
		// Root without CAP_SYS_RESOURCE (den in a container) may not
		// set another uid's limits; the control group and den's own
		// measure still bound it.
		if err != nil && !(b.uid == 0 && errors.Is(err, unix.EPERM)) {
			return fmt.Errorf("bwrap: %s: %w", l.what, err)
		}
	}
	return nil
}

// runHelper writes a map of child's user namespace with newuidmap or
// newgidmap.
func runHelper(name string, child int, rs []sandbox.IDRange) error {
	bin, err := idmap.LookHelper(name)
	if err != nil {
		return fmt.Errorf("%w: bwrap: %s not found: install uidmap, or remove your ranges from /etc/subuid and /etc/subgid", sandbox.ErrUnavailable, name)
	}
	args := []string{strconv.Itoa(child)}
	for _, r := range rs {
		args = append(args, strconv.FormatUint(uint64(r.Inside), 10), strconv.FormatUint(uint64(r.Host), 10), strconv.FormatUint(uint64(r.Count), 10))
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: bwrap: %s %s: %v: %s", sandbox.ErrUnavailable, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lower sets pid's resource limit to n, or to its hard limit when that
// is lower: an ordinary user cannot raise a hard limit, and a tighter
// bound than asked for is still a bound.
func lower(pid, resource int, n uint64) error {
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, resource, nil, &cur); err != nil {
		return err
	}
	n = min(n, cur.Max)
	return unix.Prlimit(pid, resource, &unix.Rlimit{Cur: n, Max: n}, nil)
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
	cmd       *exec.Cmd
	stage     *stage     // staged bind sources, as root; released once the sandbox holds its copies
	net       *netns.Net // the computer's network, when on
	stopNet   func()     // stops serving it
	netOnce   sync.Once
	child     int        // host pid of pid 1 inside the sandbox
	mu        sync.Mutex // guards childFD and gone
	childFD   int        // a pidfd of child, -1 when none (or bwrap has exited)
	gone      bool       // bwrap has exited: child is reaped
	ns        string     // the sandbox's pid namespace
	waited    chan struct{}
	waitErr   error
	once      sync.Once
	stageOnce sync.Once
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
		p.mu.Lock()
		switch {
		case p.gone:
			// Everything has exited; the pids may be others' now.
		case p.childFD >= 0:
			unix.PidfdSendSignal(p.childFD, unix.SIGKILL, nil, 0)
		case p.child > 0:
			unix.Kill(p.child, unix.SIGKILL)
		default:
			unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		}
		p.mu.Unlock()
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
	p.Ready()
	p.closeNet()
	return p.waitErr
}

// closeNet stops serving the computer's network and closes den's
// listeners in it, once the sandbox has exited.
func (p *process) closeNet() {
	p.netOnce.Do(func() {
		if p.stopNet != nil {
			p.stopNet()
		}
		if p.net != nil {
			p.net.Close()
		}
	})
}

// exitNow is bwrap's exit, if it has exited, for messages.
func (p *process) exitNow() error {
	select {
	case <-p.waited:
		return p.waitErr
	default:
		return errors.New("still running")
	}
}

// Ready tells the process that the sandbox is up, its mounts made: the
// staged sources are detached (the sandbox keeps its own copies).
func (p *process) Ready() {
	p.stageOnce.Do(p.stage.release)
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
	// As root, den runs bwrap as the computer's unprivileged uid: the
	// checks and the trial are an unprivileged user's.
	out = append(out, userNSChecks()...)
	out = append(out, seccompCheck())
	trial := exec.CommandContext(ctx, b.path, "--unshare-all", "--unshare-user", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL", "true")
	trial.Dir = "/"
	if b.uid == 0 {
		trial.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	}
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

func userNSChecks() []sandbox.Check {
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
