package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"strings"
	"time"
)

// Tier names the isolation a backend gives on this host, strongest first.
type Tier string

const (
	// TierVM is a user-space kernel or a virtual machine (gVisor).
	TierVM Tier = "vm"
	// TierNamespaces is Linux namespaces plus seccomp (bubblewrap).
	TierNamespaces Tier = "namespaces"
	// TierNone is path translation only (PRoot): no isolation at all.
	TierNone Tier = "none"
)

// Describe returns the words den doctor prints for the tier.
func (t Tier) Describe() string {
	switch t {
	case TierVM:
		return "user-space kernel (strongest)"
	case TierNamespaces:
		return "kernel namespaces + seccomp"
	case TierNone:
		return "no isolation (path translation only)"
	}
	return string(t)
}

// Backend starts processes inside an agent's computer. Each implementation
// lives in its own subpackage (bwrap, proot) and is chosen explicitly: den
// never falls back from one backend to a weaker one on its own.
type Backend interface {
	// Name is the backend's configuration name ("bwrap", "proot").
	Name() string
	// Tier is the isolation the backend provides.
	Tier() Tier
	// Check reports, one finding each, whether the backend can run here.
	// A finding with Fatal set means Start will fail.
	Check(ctx context.Context) []Check
	// Start launches the sandbox described by spec, running cmd as its
	// main process. The returned Process owns everything started inside.
	Start(ctx context.Context, spec *Spec, cmd *Cmd) (Process, error)
}

// Process is a running sandbox.
type Process interface {
	// Pid is the host pid of the process that holds the sandbox (the one
	// den started).
	Pid() int
	// Members lists the host pids of every process inside the sandbox.
	Members() ([]int, error)
	// HostPid maps a pid as seen inside the sandbox to a host pid; ok is
	// false when no such process is in the sandbox.
	HostPid(inner int) (host int, ok bool)
	// Kill ends every process in the sandbox. It is safe to call more
	// than once.
	Kill() error
	// Wait waits for the sandbox's main process to exit.
	Wait() error
}

// Cmd is the main process of a sandbox.
type Cmd struct {
	Args   []string
	Env    []string // the whole environment; nothing leaks from den's own
	Dir    string   // guest path; "" means /
	Stdin  *os.File // nil means /dev/null
	Stdout *os.File // nil means /dev/null
	Stderr *os.File // nil means /dev/null
}

// Spec describes one sandbox: the computer's root, what is bound into it,
// and the policy it runs under.
type Spec struct {
	// Rootfs is the host directory mounted read-write at /.
	Rootfs string
	// Binds are host paths bound at guest paths, after the rootfs, in
	// order.
	Binds []Bind
	// Network says whether the sandbox reaches the world. When false,
	// only a private loopback exists inside. When true, Egress must be
	// set: it is the computer's one way out.
	Network bool
	// Egress serves the sandbox's network when it is on.
	Egress Egress
	// Hostname inside the sandbox.
	Hostname string
	// Limits are resource limits; zero fields mean no limit.
	Limits Limits
	// Cgroup, when set, names the group the sandbox's processes join. It
	// is created by the caller and left to the caller to remove.
	Cgroup Cgroup
	// IDs maps the computer's user and group ids to the host's. The
	// rootfs and every read-write bind must be owned by root inside
	// (IDs.Root). A backend that enforces it refuses a map that would
	// make root inside host root.
	IDs IDMap
}

// Egress is the way out of a sandbox's network: with the network on,
// the backend hands it listeners it opened inside the sandbox's own
// network namespace, which receive every connection and DNS query the
// computer makes (see package netns), and nothing else leaves.
type Egress interface {
	// Serve serves the TCP connections tcp accepts (each redirected
	// there; netns.OriginalDst says where it was going) and the DNS
	// queries dns receives, in goroutines of its own. stop ends serving,
	// closes the listeners and every connection, and waits for those
	// goroutines.
	Serve(tcp []net.Listener, dns net.PacketConn) (stop func())
	// Open reports whether the policy lets every connection out: the
	// only policy a backend that shares the host's network (proot) can
	// honor.
	Open() bool
}

// Cgroup is the part of a control group a backend needs to place a
// sandbox into it.
type Cgroup interface {
	Add(pid int) error
}

// Limits are per-computer resource limits.
type Limits struct {
	MemoryBytes int64  // 0: no limit
	Pids        int64  // 0: no limit
	CPUWeight   uint64 // 1..10000 (cgroup v2 weight, 100 is the default); 0: default
	TmpBytes    int64  // size of the /tmp tmpfs; 0: the kernel's default (half the memory)
	// DiskBytes caps what the computer holds on disk; the backend
	// bounds each file by it (RLIMIT_FSIZE), and the caller measures
	// the whole. 0: no cap.
	DiskBytes int64
}

// Bind mounts a host path at a guest path.
type Bind struct {
	Host     string
	Guest    string
	ReadOnly bool
	// Internal marks den's own binds (its control folder, the host
	// command program and socket, the computer's session and agent
	// folders), as opposed to the user's mounts.
	Internal bool
}

// String renders the bind in the CLI's HOST:GUEST[:ro] form.
func (b Bind) String() string {
	s := b.Host + ":" + b.Guest
	if b.ReadOnly {
		s += ":ro"
	}
	return s
}

// ParseMount parses the CLI form HOST:GUEST[:ro|:rw]. The host path must
// exist; the guest path must be absolute and clean, and may not replace
// the computer's root or den's own folders.
func ParseMount(s string) (Bind, error) {
	parts := strings.Split(s, ":")
	var b Bind
	switch {
	case len(parts) == 2:
	case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
		b.ReadOnly = parts[2] == "ro"
	default:
		return b, fmt.Errorf("%w: %q: want HOST:GUEST or HOST:GUEST:ro", ErrBadMount, s)
	}
	b.Host, b.Guest = parts[0], parts[1]
	if err := b.Validate(); err != nil {
		return Bind{}, err
	}
	return b, nil
}

// Validate checks that the host path exists and the guest path is an
// acceptable mount point.
func (b Bind) Validate() error {
	if b.Host == "" || !strings.HasPrefix(b.Host, "/") {
		return fmt.Errorf("%w: host path %q must be absolute", ErrBadMount, b.Host)
	}
	if _, err := os.Stat(b.Host); err != nil {
		return fmt.Errorf("%w: host path %s: %w", ErrBadMount, b.Host, err)
	}
	if !strings.HasPrefix(b.Guest, "/") || path.Clean(b.Guest) != b.Guest {
		return fmt.Errorf("%w: guest path %q must be absolute and clean", ErrBadMount, b.Guest)
	}
	for _, reserved := range reservedGuestPaths {
		if b.Guest == reserved || strings.HasPrefix(reserved, b.Guest+"/") || b.Guest == "/" {
			return fmt.Errorf("%w: guest path %s would hide %s", ErrBadMount, b.Guest, reserved)
		}
	}
	return nil
}

// reservedGuestPaths are the mount points den owns inside every computer.
var reservedGuestPaths = []string{
	"/proc", "/dev", "/tmp", GuestRun, "/run/den-host", "/usr/local/bin/den-hostcmd", GuestWorkspace,
	GuestAttachments, GuestOffloads, GuestBrowser, GuestMemory, GuestSkills, GuestShared,
}

// Check is one finding of a readiness check, as printed by den doctor.
type Check struct {
	Name   string `json:"name"` // what was checked, e.g. "bwrap version"
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`          // what was found
	Fix    string `json:"fix,omitempty"`   // what to do when not OK
	Fatal  bool   `json:"fatal,omitempty"` // den cannot run commands while this fails
}

// Command is one command to run in a computer.
type Command struct {
	// Script is shell source; it is run as a script file, so quoting and
	// heredocs work. A final newline is added when missing.
	Script string
	// Stdin, when not nil, is the command's standard input; otherwise it
	// reads /dev/null.
	Stdin []byte
	// Timeout ends the command's whole process tree; 0 means the session
	// default.
	Timeout time.Duration
	// OnOutput, when set, receives cleaned output as it arrives; stream is
	// "stdout" or "stderr". It must not block for long.
	OnOutput func(stream string, text string)
	// NoOffload keeps a capped output from being saved to the offload
	// folder (for callers that stream it elsewhere through OnOutput).
	NoOffload bool
	// RawOutput makes OnOutput receive the bytes exactly as the command
	// wrote them (den exec passes them through); the Result's text is
	// cleaned all the same.
	RawOutput bool
}

// Result is what a command left behind.
type Result struct {
	// Output is stdout and stderr interleaved in arrival order, cleaned
	// (escapes stripped, progress lines folded, valid UTF-8) and capped.
	Output string
	// Stdout and Stderr are the same, separately.
	Stdout, Stderr string
	ExitCode       int
	TimedOut       bool
	Canceled       bool
	// Truncated says Output was capped; OffloadPath is then the guest
	// path of the file holding all of it (empty if it could not be
	// written, with the reason in Note).
	Truncated   bool
	OffloadPath string
	// TotalBytes is the size of the whole cleaned output.
	TotalBytes int64
	// Note explains anything unusual (timeout, restart of the shell),
	// in words meant for the model and the user.
	Note     string
	Duration time.Duration
}
