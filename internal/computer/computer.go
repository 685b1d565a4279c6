package computer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/secret"
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
	ids     sandbox.IDMap // the user and group ids the computers run as
	idErr   error
	owners  idmap.OwnerNS   // user namespaces for probing users' folders
	cgroups *cgroup.Manager // nil when resource limits are unavailable
	cgErr   error
	stores  sync.Map // agent → *checkpoint.Store, kept for its listing cache
	// RootfsOptions are used when a computer is provisioned.
	RootfsOptions rootfs.Options
	// Egress serves the computers' networks; nil is a proxy with
	// egress's default options, made at the first start that needs it.
	Egress *egress.Proxy
	// Secrets are the secrets computers' connections may carry; nil is
	// the data dir's, opened at first use.
	Secrets  *secret.Store
	egressMu sync.Mutex
	cas      map[string]*egress.CA // the agents' CAs, loaded once
}

// proxy is m.Egress, made if unset.
func (m *Manager) proxy() *egress.Proxy {
	m.egressMu.Lock()
	defer m.egressMu.Unlock()
	if m.Egress == nil {
		m.Egress = egress.New(egress.Options{})
	}
	return m.Egress
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
	m.ids, m.idErr = idmap.For(abs)
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

// IDs is the map of user and group ids the computers run with: what
// root inside is on the host.
func (m *Manager) IDs() (sandbox.IDMap, error) { return m.ids, m.idErr }

// give makes a folder den creates for a computer belong to root inside
// (den is root; as an ordinary user it already does).
func (m *Manager) give(path string) error {
	uid, gid, ok := m.ids.Root()
	if os.Geteuid() != 0 || !ok {
		return nil
	}
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("computer: %w", err)
	}
	return nil
}

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
	return c.ensureOwnersOnce(info)
}

// treeIDs is the map the computer's files are owned by now (see
// TreeIDs).
func (c *Computer) treeIDs(info rootfs.Info) sandbox.IDMap { return TreeIDs(c.m.ids, info) }

// TreeIDs is the map the files of a computer provisioned as info says
// are owned by now, ids being den's map for its computers: ids, or as
// root for a tree not yet given to them, the inside ids themselves or
// the range the tree was given before.
func TreeIDs(ids sandbox.IDMap, info rootfs.Info) sandbox.IDMap {
	uid, gid, _ := ids.Root()
	switch {
	case os.Geteuid() != 0 || (info.Owner != nil && int(info.Owner.UID) == uid && int(info.Owner.GID) == gid):
		return ids
	case info.Owner == nil:
		return idmap.Identity
	}
	return sandbox.IDMap{
		UIDs: []sandbox.IDRange{{Inside: 0, Host: info.Owner.UID, Count: idmap.Size}},
		GIDs: []sandbox.IDRange{{Inside: 0, Host: info.Owner.GID, Count: idmap.Size}},
	}
}

// ensureOwners gives the computer's files to its own ids when they are
// not yet (a tree just provisioned, or made by an older den whose
// computers' root was host root; or the range changed): the rootfs, the
// agent's folders and every session's, once, recorded in computer.json.
// As an ordinary user the tree is the user's already, as root inside is.
// conversions holds, per computer folder, the lock of giving its files
// to its ids: sessions of a computer starting together in one process
// convert it once (the others wait, then find it done).
var conversions sync.Map

func (c *Computer) ensureOwnersOnce(info rootfs.Info) (rootfs.Info, error) {
	m, _ := conversions.LoadOrStore(c.dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	// Read again under the lock: another start may have converted it.
	if fresh, ok, err := c.Info(); err == nil && ok {
		info = fresh
	}
	return c.ensureOwners(info)
}

func (c *Computer) ensureOwners(info rootfs.Info) (rootfs.Info, error) {
	if os.Geteuid() != 0 {
		return info, nil
	}
	if c.m.idErr != nil {
		return info, c.m.idErr
	}
	uid, gid, _ := c.m.ids.Root()
	if info.Owner != nil && int(info.Owner.UID) == uid && int(info.Owner.GID) == gid {
		return info, nil
	}
	if running := c.running(); len(running) > 0 {
		return info, fmt.Errorf("%w: computer %s must give its files to its own user ids once, with no session running (%s running)",
			ErrInUse, c.agent, strings.Join(running, ", "))
	}
	from := c.treeIDs(info)
	say := func(string) {}
	if p := c.m.RootfsOptions.Progress; p != nil {
		say = func(msg string) { p(rootfs.Progress{Stage: rootfs.StageOwners, Message: msg}) }
	}
	say(fmt.Sprintf("giving computer %s's files to its own user ids (root inside is host uid %d)", c.agent, uid))
	trees := []string{c.Rootfs()}
	for _, d := range sandbox.AgentDirs {
		trees = append(trees, filepath.Join(c.dir, d.Name))
	}
	sessions, _ := os.ReadDir(filepath.Join(c.dir, "sessions"))
	for _, e := range sessions {
		for _, d := range sandbox.SessionDirs {
			trees = append(trees, filepath.Join(c.dir, "sessions", e.Name(), d.Name))
		}
	}
	total := 0
	for _, t := range trees {
		if _, err := os.Lstat(t); errors.Is(err, os.ErrNotExist) {
			continue
		}
		n, err := idmap.Shift(t, from, c.m.ids, func(done int) {
			if done%65536 == 0 {
				say(fmt.Sprintf("%d files…", total+done))
			}
		})
		total += n
		if err != nil {
			return info, fmt.Errorf("computer %s: %w", c.agent, err)
		}
	}
	info.Owner = &rootfs.Owner{UID: uint32(uid), GID: uint32(gid)}
	if err := rootfs.WriteInfo(c.infoFile(), info); err != nil {
		return info, err
	}
	if total > 0 {
		say(fmt.Sprintf("%d files now belong to the computer's own ids", total))
	}
	return info, nil
}

// SessionOptions are the per-session choices.
type SessionOptions struct {
	// Network gives the computer the network, through den's egress
	// proxy under Egress's policy; off, it has only its loopback.
	Network bool
	// Egress is the network's policy, where its connections are
	// reported and who is asked about them. Its Agent and Session are
	// the computer's and the session's.
	Egress  egress.Scope
	Mounts  []sandbox.Bind
	Limits  sandbox.Limits
	Env     []string // added to the base environment
	Timeout time.Duration
	Log     func(string)
	// Host, when set, gives the computer den's host commands.
	Host *HostCommands
	// Undo is the agent's checkpoint policy (the zero value: none).
	Undo Undo
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
	if c.m.idErr != nil {
		return sandbox.Spec{}, c.m.idErr
	}
	spec := sandbox.Spec{Rootfs: c.Rootfs(), Network: o.Network, Hostname: "den", Limits: o.Limits, IDs: c.m.ids}
	if o.Network {
		sc := o.Egress
		sc.Agent, sc.Session = c.agent, session
		spec.Egress = c.m.proxy().Net(sc)
	}
	sdir := c.SessionDir(session)
	for _, d := range sandbox.SessionDirs {
		h := filepath.Join(sdir, d.Name)
		if err := c.folder(h); err != nil {
			return spec, fmt.Errorf("computer: session folder: %w", err)
		}
		spec.Binds = append(spec.Binds, sandbox.Bind{Host: h, Guest: d.Guest, Internal: true})
	}
	for _, d := range sandbox.AgentDirs {
		h := filepath.Join(c.dir, d.Name)
		if err := c.folder(h); err != nil {
			return spec, fmt.Errorf("computer: agent folder: %w", err)
		}
		spec.Binds = append(spec.Binds, sandbox.Bind{Host: h, Guest: d.Guest, Internal: true})
	}
	for _, m := range o.Mounts {
		if err := m.Validate(); err != nil {
			return spec, err
		}
		spec.Binds = append(spec.Binds, m)
	}
	return spec, nil
}

// folder makes one of the computer's folders, root inside's.
func (c *Computer) folder(h string) error {
	fi, err := os.Lstat(h)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(h, 0o755); err != nil {
		return err
	}
	return c.m.give(h)
}

// Session is a running session of a computer.
type Session struct {
	*sandbox.Session
	group *cgroup.Group
	host  *hostcmd.Listener
	use   *os.File // the computer's use lock, held shared (see lockShared)

	disk    *diskMeter // what the computer holds, measured while commands run
	diskCap int64      // 0: no cap
	env     []string   // for the network: secrets' placeholders, den's CA
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
		Env:        append(append(BaseEnv(session), o.Env...), s.env...),
		Timeout:    o.Timeout,
		Log:        o.Log,
	})
	if err != nil {
		s.release()
		os.RemoveAll(ctl)
		return nil, err
	}
	s.Session = ss
	if o.Limits.DiskBytes > 0 {
		s.disk, s.diskCap = &diskMeter{trees: c.diskTrees()}, o.Limits.DiskBytes
	}
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
	info, ok, err := c.Info()
	if !ok || err != nil {
		if err == nil {
			err = fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
		}
		return spec, nil, "", err
	}
	if _, err := c.ensureOwnersOnce(info); err != nil {
		return spec, nil, "", err
	}
	var env []string
	if o.Network {
		if env, err = c.egress(&o); err != nil {
			return spec, nil, "", err
		}
	}
	if spec, err = c.Spec(session, o); err != nil {
		return spec, nil, "", err
	}
	s = &Session{env: env}
	// A restore of the computer waits for no session, and none starts
	// while it runs.
	if s.use, err = c.lockShared(context.Background()); err != nil {
		return spec, nil, "", err
	}
	suffix = strconv.Itoa(os.Getpid()) + "." + randomSuffix()
	if c.m.cgroups != nil {
		lim := cgroup.Limits{MemoryBytes: o.Limits.MemoryBytes, Pids: o.Limits.Pids, CPUWeight: o.Limits.CPUWeight}
		if s.group, err = c.m.cgroups.Create("agent-"+c.agent+"/"+session+"."+suffix, lim); err != nil {
			s.release()
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
	// Root inside connects to the socket: it needs the folder and the
	// socket, which nothing else on the host can reach (RUN is den's).
	for _, p := range []string{l.Dir(), l.Path()} {
		if err := c.m.give(p); err != nil {
			l.Close()
			return nil, fmt.Errorf("computer: host commands: %w", err)
		}
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
	if s.use != nil {
		s.use.Close()
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
	// Checkpoints are of the computer that is gone.
	if s, err := c.Checkpoints(); err == nil {
		if err := s.RemoveAll(context.Background()); err != nil {
			return fmt.Errorf("computer: reset %s: %w", c.agent, err)
		}
		c.m.stores.Delete(c.agent)
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

// BrowserGroup makes a control group for one run of the agent's
// Chromium, with limits l, named agent-AGENT/browser.PID.RANDOM so that
// a den started later sweeps it if this one is killed. It fails,
// wrapping cgroup.ErrUnavailable, when the host offers no cgroups.
func (c *Computer) BrowserGroup(l cgroup.Limits) (*cgroup.Group, error) {
	if c.m.cgroups == nil {
		return nil, fmt.Errorf("computer: browser group: %w", c.m.cgErr)
	}
	g, err := c.m.cgroups.Create("agent-"+c.agent+"/browser."+strconv.Itoa(os.Getpid())+"."+randomSuffix(), l)
	if err != nil {
		return nil, fmt.Errorf("computer: browser group: %w", err)
	}
	return g, nil
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
	cmd.Env = append(cmd.Env, held.env...)
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

// MountWarnings says, for each user mount that will not behave as a
// person would expect, why: as root, a folder host root owns is never
// mapped (the computer's root is not host root), so the computer can
// write there only what any unprivileged user could.
func MountWarnings(mounts []sandbox.Bind) []string {
	if os.Geteuid() != 0 {
		return nil
	}
	var out []string
	for _, m := range mounts {
		var st unix.Stat_t
		if m.ReadOnly || unix.Stat(m.Host, &st) != nil || st.Uid != 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s belongs to host root, and the computer's root is not host root: inside, %s is writable only as far as its permissions let anyone write; give the folder to the user it is for (chown USER %s) to let the computer write there as that user",
			m.Host, m.Guest, m.Host))
	}
	return out
}

// Manager is the manager the computer belongs to.
func (c *Computer) Manager() *Manager { return c.m }

// AgentDir is the host folder of one of the agent's folders (memory,
// skills, shared).
func (c *Computer) AgentDir(name string) string { return filepath.Join(c.dir, name) }

// FolderOwner returns the host owner a user's folder at host is seen as
// root inside through (den root, the folder not host root's, its file
// system taking idmapped mounts); ok is false when the folder is bound
// as it is and the computer's own ids apply.
func (m *Manager) FolderOwner(host string) (uid, gid int, ok bool) {
	ruid, rgid, rok := m.ids.Root()
	if !rok {
		return 0, 0, false
	}
	return m.owners.FolderOwner(host, ruid, rgid)
}
