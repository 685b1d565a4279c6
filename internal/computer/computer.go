package computer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/rootfs"
)

// Errors.
var (
	ErrBadName     = errors.New("bad name")
	ErrNoComputer  = errors.New("no computer")
	ErrInUse       = errors.New("computer in use")
	ErrNoRootfsArg = errors.New("rootfs already provisioned")
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName checks an agent or session name: 1–64 letters, digits, '.',
// '_' or '-', not starting with a punctuation mark.
func ValidName(kind, s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("%w: %s %q: use 1-64 letters, digits, '.', '_' or '-'", ErrBadName, kind, s)
	}
	return nil
}

// Manager owns the computers under one data dir:
//
//	DATA/agents/AGENT/computer.json   what the rootfs was built from
//	DATA/agents/AGENT/rootfs/         the computer's root filesystem
//	DATA/agents/AGENT/{memory,skills,shared}/
//	DATA/agents/AGENT/sessions/ID/{workspace,attachments,offloads,browser}/
//	/run/den/HASH/ (or $XDG_RUNTIME_DIR/den/HASH/, else DATA/run/)
//	                                  control folders of running sessions
//	DATA/cache/                       downloads and bootstrapped bases
type Manager struct {
	dataDir string
	runDir  string // control folders of running sessions, on tmpfs when possible
	backend sandbox.Backend
	cgroups *cgroup.Manager // nil when resource limits are unavailable
	cgErr   error
	// RootfsOptions are used when a computer is provisioned.
	RootfsOptions rootfs.Options
}

// New returns a manager. Resource limits use cgroups when the host
// offers them; CgroupError says why not otherwise.
func New(dataDir string, backend sandbox.Backend) (*Manager, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("computer: data dir: %w", err)
	}
	for _, d := range []string{"agents", "run", "cache"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o700); err != nil {
			return nil, fmt.Errorf("computer: data dir: %w", err)
		}
	}
	m := &Manager{dataDir: abs, backend: backend, runDir: runDir(abs)}
	if err := os.MkdirAll(m.runDir, 0o700); err != nil {
		return nil, fmt.Errorf("computer: run dir: %w", err)
	}
	m.cgroups, m.cgErr = cgroup.New("den")
	if m.cgroups != nil {
		// Groups of sessions whose den was killed (SESSION.PID.RANDOM).
		m.cgroups.Sweep(func(name string) bool { return !ownerAlive(name) })
	}
	m.RootfsOptions.CacheDir = filepath.Join(abs, "cache")
	return m, nil
}

// runDir picks where control folders live: on a tmpfs when there is
// one (/run as root, $XDG_RUNTIME_DIR otherwise), since every command
// writes there; else in the data dir. A hash of the data dir keeps two
// data dirs apart.
func runDir(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	tag := hex.EncodeToString(sum[:4])
	var base string
	if os.Getuid() == 0 {
		base = "/run/den"
	} else if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		base = filepath.Join(x, "den")
	}
	if base != "" {
		if err := os.MkdirAll(base, 0o700); err == nil && unix.Access(base, unix.W_OK) == nil {
			return filepath.Join(base, tag)
		}
	}
	return filepath.Join(dataDir, "run")
}

// DataDir is the manager's data dir.
func (m *Manager) DataDir() string { return m.dataDir }

// RunDir is where the control folders of running sessions are.
func (m *Manager) RunDir() string { return m.runDir }

// Backend is the sandbox backend in use.
func (m *Manager) Backend() sandbox.Backend { return m.backend }

// CgroupError says why resource limits are unavailable, or nil.
func (m *Manager) CgroupError() error { return m.cgErr }

// Computer is one agent's persistent computer.
type Computer struct {
	m     *Manager
	agent string
	dir   string
}

// Computer returns the agent's computer, which may not be provisioned yet.
func (m *Manager) Computer(agent string) (*Computer, error) {
	if err := ValidName("agent", agent); err != nil {
		return nil, err
	}
	return &Computer{m: m, agent: agent, dir: filepath.Join(m.dataDir, "agents", agent)}, nil
}

// Agent is the computer's agent name.
func (c *Computer) Agent() string { return c.agent }

// Rootfs is the host path of the computer's root.
func (c *Computer) Rootfs() string { return filepath.Join(c.dir, "rootfs") }

func (c *Computer) infoFile() string { return filepath.Join(c.dir, "computer.json") }

// Info reports how the computer was provisioned; ok is false when it has
// not been.
func (c *Computer) Info() (rootfs.Info, bool, error) {
	if _, err := os.Stat(c.Rootfs()); errors.Is(err, os.ErrNotExist) {
		return rootfs.Info{}, false, nil
	}
	info, err := rootfs.ReadInfo(c.infoFile())
	if err != nil {
		return rootfs.Info{}, true, err
	}
	return info, true, nil
}

// Ensure provisions the computer from src when it has none yet. explicit
// says the user chose src (otherwise an unreachable default may fall
// back to Debian). Asking for a different source for an existing
// computer is an error: reset it first.
func (c *Computer) Ensure(ctx context.Context, src rootfs.Source, explicit bool) (rootfs.Info, error) {
	info, ok, err := c.Info()
	if ok {
		if err != nil {
			return info, fmt.Errorf("computer %s: %w (reset it with `den computer reset`)", c.agent, err)
		}
		if explicit && info.Source != src.String() && info.Requested != src.String() {
			return info, fmt.Errorf("%w: computer %s was built from %s, not %s: reset it first (`den computer reset --agent %s`)",
				ErrNoRootfsArg, c.agent, info.Source, src, c.agent)
		}
		return info, nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return info, fmt.Errorf("computer %s: %w", c.agent, err)
	}
	opts := c.m.RootfsOptions
	opts.FallbackToDebian = !explicit
	info, err = rootfs.Provision(ctx, c.Rootfs(), src, opts)
	if err != nil {
		return info, err
	}
	if err := rootfs.WriteInfo(c.infoFile(), info); err != nil {
		return info, err
	}
	return info, nil
}

// SessionOptions are the per-session choices.
type SessionOptions struct {
	Network bool
	Mounts  []sandbox.Bind
	Limits  sandbox.Limits
	Env     []string // added to the base environment
	Timeout time.Duration
	Log     func(string)
	// Host, when set, gives the computer den's host commands.
	Host *HostCommands
}

// HostCommands is how a computer reaches den's host commands: the shim
// bound into it under each command's name, and a socket per session
// served by Broker.
type HostCommands struct {
	Broker *hostcmd.Broker
	Shim   string   // host path of the den-hostcmd program
	Names  []string // the names linked to it in /usr/local/bin
}

// BaseEnv is the environment every process in a computer starts with.
func BaseEnv(session string) []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"USER=root",
		"LOGNAME=root",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"SHELL=/bin/sh",
		"PWD=" + sandbox.GuestWorkspace,
		"DEN_SESSION=" + session,
	}
}

// SessionDir is the host folder of a session's per-session folders.
func (c *Computer) SessionDir(session string) string {
	return filepath.Join(c.dir, "sessions", session)
}

// Spec builds the sandbox description of a session: the rootfs, the
// per-session and per-agent folders, and the user's mounts.
func (c *Computer) Spec(session string, o SessionOptions) (sandbox.Spec, error) {
	if err := ValidName("session", session); err != nil {
		return sandbox.Spec{}, err
	}
	spec := sandbox.Spec{Rootfs: c.Rootfs(), Network: o.Network, Hostname: "den", Limits: o.Limits}
	sdir := c.SessionDir(session)
	for _, d := range sandbox.SessionDirs {
		h := filepath.Join(sdir, d.Name)
		if err := os.MkdirAll(h, 0o755); err != nil {
			return spec, fmt.Errorf("computer: session folder: %w", err)
		}
		spec.Binds = append(spec.Binds, sandbox.Bind{Host: h, Guest: d.Guest})
	}
	for _, d := range sandbox.AgentDirs {
		h := filepath.Join(c.dir, d.Name)
		if err := os.MkdirAll(h, 0o755); err != nil {
			return spec, fmt.Errorf("computer: agent folder: %w", err)
		}
		spec.Binds = append(spec.Binds, sandbox.Bind{Host: h, Guest: d.Guest})
	}
	for _, m := range o.Mounts {
		if err := m.Validate(); err != nil {
			return spec, err
		}
		spec.Binds = append(spec.Binds, m)
	}
	return spec, nil
}

// Session is a running session of a computer.
type Session struct {
	*sandbox.Session
	group *cgroup.Group
	host  *hostcmd.Listener
}

// Close stops every process of the session, its host-command socket and
// its control group.
func (s *Session) Close() error {
	err := s.Session.Close()
	s.release()
	return err
}

// Start starts a session's computer. The computer must be provisioned.
func (c *Computer) Start(ctx context.Context, session string, o SessionOptions) (*Session, error) {
	spec, s, suffix, err := c.prepare(session, o)
	if err != nil {
		return nil, err
	}
	ctl := filepath.Join(c.m.runDir, c.agent+"."+session+"."+suffix)
	ss, err := sandbox.Start(ctx, sandbox.SessionOptions{
		Backend:    c.m.backend,
		Spec:       spec,
		ControlDir: ctl,
		OffloadDir: filepath.Join(c.SessionDir(session), "offloads"),
		Env:        append(BaseEnv(session), o.Env...),
		Timeout:    o.Timeout,
		Log:        o.Log,
	})
	if err != nil {
		s.release()
		os.RemoveAll(ctl)
		return nil, err
	}
	s.Session = ss
	return s, nil
}

// prepare readies what a session's sandbox needs, for Start and
// StartRaw: the computer must be provisioned; the spec gets the
// session's folders and mounts, its control group (each running
// session is a group of its own, with the agent's limits, so that it
// is constrained and stopped as one) and its host-command socket. The
// returned Session holds the group and socket (release frees them);
// suffix names the session's run-time folders.
func (c *Computer) prepare(session string, o SessionOptions) (spec sandbox.Spec, s *Session, suffix string, err error) {
	if _, ok, err := c.Info(); !ok || err != nil {
		if err == nil {
			err = fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
		}
		return spec, nil, "", err
	}
	if spec, err = c.Spec(session, o); err != nil {
		return spec, nil, "", err
	}
	s = &Session{}
	suffix = strconv.Itoa(os.Getpid()) + "." + randomSuffix()
	if c.m.cgroups != nil {
		lim := cgroup.Limits{MemoryBytes: o.Limits.MemoryBytes, Pids: o.Limits.Pids, CPUWeight: o.Limits.CPUWeight}
		if s.group, err = c.m.cgroups.Create("agent-"+c.agent+"/"+session+"."+suffix, lim); err != nil {
			return spec, nil, "", fmt.Errorf("computer: %w", err)
		}
		spec.Cgroup = s.group
	}
	if s.host, err = c.listenHost(session, suffix, o, &spec); err != nil {
		s.release()
		return spec, nil, "", err
	}
	return spec, s, suffix, nil
}

// listenHost opens the session's host-command socket and adds the
// shim and the socket to spec; nil when the session has no host
// commands.
func (c *Computer) listenHost(session, suffix string, o SessionOptions, spec *sandbox.Spec) (*hostcmd.Listener, error) {
	if o.Host == nil {
		return nil, nil
	}
	if err := hostcmd.EnsureLinks(c.Rootfs(), o.Host.Names); err != nil {
		return nil, fmt.Errorf("computer: host commands: %w", err)
	}
	l, err := o.Host.Broker.Listen(filepath.Join(c.m.runDir, c.agent+"."+session+"."+suffix+".host"), hostcmd.SessionInfo{Agent: c.agent, Session: session})
	if err != nil {
		return nil, fmt.Errorf("computer: host commands: %w", err)
	}
	spec.Binds = append(spec.Binds, hostcmd.Binds(o.Host.Shim, l.Dir())...)
	return l, nil
}

// release closes the session's host-command socket and removes its
// control group (after its processes ended, or when a start failed).
func (s *Session) release() {
	if s.host != nil {
		s.host.Close()
		os.RemoveAll(s.host.Dir())
	}
	if s.group != nil {
		s.group.Remove()
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Status is one line of `den computer list`.
type Status struct {
	Agent    string
	Info     rootfs.Info
	Err      error
	Sessions []string
	Bytes    int64 // disk use of the rootfs
}

// List reports every provisioned computer.
func (m *Manager) List() ([]Status, error) {
	ents, err := os.ReadDir(filepath.Join(m.dataDir, "agents"))
	if err != nil {
		return nil, fmt.Errorf("computer: list: %w", err)
	}
	var out []Status
	for _, e := range ents {
		if !e.IsDir() || ValidName("agent", e.Name()) != nil {
			continue
		}
		c, _ := m.Computer(e.Name())
		info, ok, err := c.Info()
		if !ok {
			continue
		}
		st := Status{Agent: e.Name(), Info: info, Err: err, Bytes: duBytes(c.Rootfs())}
		if ss, err := os.ReadDir(filepath.Join(c.dir, "sessions")); err == nil {
			for _, s := range ss {
				st.Sessions = append(st.Sessions, s.Name())
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, nil
}

func duBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Reset removes the computer's rootfs so that the next start provisions
// it again. With keepHome, /root is kept and put back into the new
// rootfs by the next Ensure. Session and agent folders are not touched.
func (c *Computer) Reset(keepHome bool) error {
	if _, ok, _ := c.Info(); !ok {
		return fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
	}
	if running := c.running(); len(running) > 0 {
		return fmt.Errorf("%w: agent %s has running sessions (%s)", ErrInUse, c.agent, strings.Join(running, ", "))
	}
	trash := filepath.Join(c.dir, "rootfs.old-"+randomSuffix())
	if err := os.Rename(c.Rootfs(), trash); err != nil {
		return fmt.Errorf("computer: reset %s: %w", c.agent, err)
	}
	os.Remove(c.infoFile())
	if keepHome {
		saved := filepath.Join(c.dir, "home.saved")
		os.RemoveAll(saved)
		if err := os.Rename(filepath.Join(trash, "root"), saved); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("computer: reset %s: keep /root: %w", c.agent, err)
		}
	}
	if err := removeAll(trash); err != nil {
		return fmt.Errorf("computer: reset %s: %w", c.agent, err)
	}
	return nil
}

// RestoreHome moves a /root kept by Reset into the current rootfs.
func (c *Computer) RestoreHome() error {
	saved := filepath.Join(c.dir, "home.saved")
	if _, err := os.Stat(saved); err != nil {
		return nil
	}
	home := filepath.Join(c.Rootfs(), "root")
	if err := removeAll(home); err != nil {
		return fmt.Errorf("computer: restore /root: %w", err)
	}
	if err := os.Rename(saved, home); err != nil {
		return fmt.Errorf("computer: restore /root: %w", err)
	}
	return nil
}

// removeAll removes a tree even where the sandbox left read-only
// directories behind.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// ownerAlive reports whether the den process named in a session's
// group or control folder name (…SESSION.PID.RANDOM) is alive.
func ownerAlive(name string) bool {
	f := strings.Split(name, ".")
	if len(f) < 3 {
		return true
	}
	pid, err := strconv.Atoi(f[len(f)-2])
	if err != nil || pid <= 0 {
		return true
	}
	return pid == os.Getpid() || unix.Kill(pid, 0) == nil
}

// running lists the sessions of this computer that have a control
// folder whose den process is alive (AGENT.SESSION.PID.RANDOM); control
// folders left by a den that was killed are removed.
func (c *Computer) running() []string {
	dir := c.m.runDir
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		f := strings.Split(e.Name(), ".")
		if len(f) == 5 && f[4] == "host" && f[0] == c.agent {
			if !ownerAlive(strings.TrimSuffix(e.Name(), ".host")) {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
			continue
		}
		if len(f) != 4 || f[0] != c.agent {
			continue
		}
		if ownerAlive(e.Name()) {
			out = append(out, f[1])
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	return out
}

// Export writes the computer's rootfs as an uncompressed tar stream.
func (c *Computer) Export(ctx context.Context, w io.Writer) error {
	if _, ok, _ := c.Info(); !ok {
		return fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
	}
	// tar(1) keeps owners, modes, links and special bits exactly and
	// never follows the rootfs's symlinks.
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "-C", c.Rootfs(), "-cf", "-", ".")
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("computer: export %s: %v: %s", c.agent, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Import provisions the computer from a tar file made by Export (or any
// rootfs tarball). The computer must not exist yet.
func (c *Computer) Import(ctx context.Context, file string) (rootfs.Info, error) {
	if _, ok, _ := c.Info(); ok {
		return rootfs.Info{}, fmt.Errorf("%w: agent %s already has a computer: reset it first", ErrInUse, c.agent)
	}
	src, err := rootfs.ParseSource("tar:" + file)
	if err != nil {
		return rootfs.Info{}, err
	}
	return c.Ensure(ctx, src, true)
}

// StartRaw starts cmd as the main process of a sandbox of the session,
// without den's supervisor (den sh uses it for a terminal). cleanup
// stops everything and releases the session's control group.
func (c *Computer) StartRaw(ctx context.Context, session string, o SessionOptions, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
	spec, held, _, err := c.prepare(session, o)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.m.backend.Start(ctx, &spec, cmd)
	if err != nil {
		held.release()
		return nil, nil, err
	}
	cleanup := func() {
		p.Kill()
		p.Wait()
		held.release()
	}
	return p, cleanup, nil
}
