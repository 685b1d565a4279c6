package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Version names a cgroup layout: the host's (Info.Version) or the hierarchy
// a Manager uses (Info.Backend, Manager.Version).
type Version int

const (
	// None means no usable cgroup hierarchy.
	None Version = iota
	// V1 is the legacy layout: one hierarchy per controller.
	V1
	// V2 is the unified layout: one hierarchy for every controller.
	V2
	// Hybrid is a host with v1 controller hierarchies and a v2 hierarchy
	// mounted side by side (usually at /sys/fs/cgroup/unified). It is never
	// a backend.
	Hybrid
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	case Hybrid:
		return "hybrid"
	default:
		return "none"
	}
}

// wanted lists the controllers den uses, in the order Add moves a process
// into them: pids first, so that a fork bomb is bounded as early as possible.
// The freezer is a v1 hierarchy; v2 has freezing built in.
var wanted = []string{"pids", "memory", "cpu", "freezer"}

// Info describes the host's cgroups as den sees them. It is what
// `den doctor` prints, and what New acts on.
type Info struct {
	// Version is the layout of the host's cgroup filesystems.
	Version Version
	// Unified is the mount point of the v2 hierarchy, or "" when none is mounted.
	Unified string
	// Hierarchies maps each mounted v1 controller to its mount point.
	Hierarchies map[string]string
	// Self is den's own cgroup in the v2 hierarchy, e.g. "/user.slice/...".
	Self string

	// Backend is the hierarchy New uses: V1, V2, or None when den cannot
	// create groups.
	Backend Version
	// Base is the cgroup path, relative to the root of each hierarchy, under
	// which New creates its parent: "/" for root, den's own cgroup when it
	// uses a delegated v2 subtree.
	Base string
	// Controllers lists the controllers den can use at Base.
	Controllers []string
	// Enabled lists the controllers already enabled in Base's
	// cgroup.subtree_control (v2 only).
	Enabled []string
	// Missing lists the controllers den wants but cannot use at Base; limits
	// that need them fail with ErrNoController.
	Missing []string
	// Reason says why Backend is None and how to fix it; empty otherwise.
	Reason string
}

// Usable reports whether New can succeed.
func (i Info) Usable() bool { return i.Backend != None }

// String renders Info as a few lines for `den doctor`.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cgroup layout: %s", i.Version)
	if i.Unified != "" {
		fmt.Fprintf(&b, "; v2 at %s", i.Unified)
	}
	if len(i.Hierarchies) > 0 {
		names := make([]string, 0, len(i.Hierarchies))
		for c := range i.Hierarchies {
			names = append(names, c)
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "; v1 controllers: %s", strings.Join(names, " "))
	}
	b.WriteByte('\n')
	if i.Backend == None {
		fmt.Fprintf(&b, "cgroup backend: none: %s\n", i.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "cgroup backend: %s under %s (controllers: %s)\n",
		i.Backend, i.Base, strings.Join(i.Controllers, " "))
	if len(i.Missing) > 0 {
		fmt.Fprintf(&b, "cgroup missing: %s (limits needing them are refused)\n", strings.Join(i.Missing, " "))
	}
	return b.String()
}

// Detect inspects /proc/self/mountinfo, /proc/self/cgroup and the cgroup
// filesystems, and reports where den can create groups. It changes nothing.
func Detect() Info {
	info := Info{Hierarchies: map[string]string{}}
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		info.Reason = fmt.Sprintf("cannot read mount table: %v", err)
		return info
	}
	defer mounts.Close()
	info.Unified, info.Hierarchies, err = parseMountinfo(mounts)
	if err != nil {
		info.Reason = fmt.Sprintf("cannot parse /proc/self/mountinfo: %v", err)
		return info
	}
	if self, err := os.Open("/proc/self/cgroup"); err == nil {
		paths, _ := parseProcCgroup(self)
		self.Close()
		info.Self = paths[""]
	}

	v1Mounted := false
	for _, c := range wanted {
		if info.Hierarchies[c] != "" {
			v1Mounted = true
		}
	}
	switch {
	case info.Unified != "" && v1Mounted:
		info.Version = Hybrid
	case info.Unified != "":
		info.Version = V2
	case v1Mounted:
		info.Version = V1
	default:
		info.Reason = "no cgroup filesystem is mounted; mount one with `mount -t cgroup2 none /sys/fs/cgroup`"
		return info
	}

	v2 := probeV2(info.Unified, info.Self)
	v1 := probeV1(info.Hierarchies)
	switch {
	case v2.ok && (!v1.ok || (slices.Contains(v2.controllers, "memory") && slices.Contains(v2.controllers, "pids"))):
		info.Backend, info.Base, info.Controllers, info.Enabled = V2, v2.base, v2.controllers, v2.enabled
		info.Missing = missing(wanted[:3], v2.controllers)
	case v1.ok:
		info.Backend, info.Base, info.Controllers = V1, "/", v1.controllers
		info.Missing = missing(wanted, v1.controllers)
	default:
		var reasons []string
		for _, r := range []string{v2.reason, v1.reason} {
			if r != "" {
				reasons = append(reasons, r)
			}
		}
		info.Reason = strings.Join(reasons, "; ")
	}
	return info
}

// probe is what one hierarchy offers den.
type probe struct {
	ok          bool
	base        string
	controllers []string
	enabled     []string
	reason      string
}

// probeV2 finds where den may create v2 groups: the root of the hierarchy
// when it is writable (root), else den's own cgroup when it was delegated.
func probeV2(mount, self string) probe {
	if mount == "" {
		return probe{}
	}
	var p probe
	switch own := filepath.Join(mount, self); {
	case writable(mount):
		p.base = "/"
	case self != "" && writable(own) &&
		writable(filepath.Join(own, "cgroup.procs")) &&
		writable(filepath.Join(own, "cgroup.subtree_control")):
		p.base = self
	default:
		return probe{reason: fmt.Sprintf(
			"cgroup v2 at %s is not delegated to uid %d (its cgroup %s is not writable); "+
				"run den in a delegated unit, e.g. `systemd-run --user --scope -p Delegate=yes den ...` "+
				"or a service with Delegate=yes", mount, os.Geteuid(), self)}
	}
	dir := filepath.Join(mount, p.base)
	available, _ := readFields(filepath.Join(dir, "cgroup.controllers"))
	p.enabled, _ = readFields(filepath.Join(dir, "cgroup.subtree_control"))
	for _, c := range wanted[:3] {
		if slices.Contains(available, c) {
			p.controllers = append(p.controllers, c)
		}
	}
	p.ok = true
	return p
}

// probeV1 checks that den may create groups at the root of the v1
// hierarchies it wants, which takes root (or CAP_SYS_ADMIN on a writable
// mount), and that they include pids or memory.
func probeV1(hierarchies map[string]string) probe {
	if len(hierarchies) == 0 {
		return probe{}
	}
	var p probe
	for _, c := range wanted {
		if m := hierarchies[c]; m != "" && writable(m) {
			p.controllers = append(p.controllers, c)
		}
	}
	if !slices.Contains(p.controllers, "pids") && !slices.Contains(p.controllers, "memory") {
		p.reason = fmt.Sprintf("cgroup v1 needs root (den runs as uid %d); run den as root, "+
			"or boot with systemd.unified_cgroup_hierarchy=1 and delegate a v2 subtree", os.Geteuid())
		return p
	}
	p.ok = true
	return p
}

func missing(want, have []string) []string {
	var out []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil
}

// parseMountinfo returns the v2 mount point and the v1 controller mount
// points listed in a /proc/<pid>/mountinfo. When a hierarchy is mounted more
// than once, the first mount of its root wins.
func parseMountinfo(r io.Reader) (unified string, v1 map[string]string, err error) {
	v1 = map[string]string{}
	fromRoot := map[string]bool{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(s.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			continue
		}
		root, point, fstype := unescape(fields[3]), unescape(fields[4]), fields[sep+1]
		switch fstype {
		case "cgroup2":
			if unified == "" || (root == "/" && !fromRoot[""]) {
				unified, fromRoot[""] = point, root == "/"
			}
		case "cgroup":
			for _, opt := range strings.Split(fields[sep+3], ",") {
				if !isController(opt) {
					continue
				}
				if v1[opt] == "" || (root == "/" && !fromRoot[opt]) {
					v1[opt], fromRoot[opt] = point, root == "/"
				}
			}
		}
	}
	return unified, v1, s.Err()
}

// isController tells a controller from the other options of a v1 mount.
func isController(opt string) bool {
	switch opt {
	case "", "rw", "ro", "noprefix", "xattr", "clone_children", "cpuset_v2_mode", "favordynmods":
		return false
	}
	return !strings.Contains(opt, "=")
}

// unescape undoes the octal escapes (\040 for a space) of mountinfo paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup maps each controller of a /proc/<pid>/cgroup to the
// process's cgroup path in it; the v2 path is under the key "".
func parseProcCgroup(r io.Reader) (map[string]string, error) {
	paths := map[string]string{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		id, rest, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && controllers == "" {
			paths[""] = path
			continue
		}
		for _, c := range strings.Split(controllers, ",") {
			paths[c] = path
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return paths, nil
}
