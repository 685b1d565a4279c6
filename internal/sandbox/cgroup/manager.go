package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Limits bounds the resources of one group. A zero field means no limit.
type Limits struct {
	// MemoryBytes bounds memory, swap included; past it the kernel's OOM
	// killer kills a process inside the group.
	MemoryBytes int64
	// Pids bounds the number of processes and threads; past it fork and
	// clone fail with EAGAIN.
	Pids int64
	// CPUWeight is the group's share of contended CPU time, 1..10000 with
	// 100 the default (cgroup v2 cpu.weight). On v1 it maps to cpu.shares,
	// 100 to 1024, as the kernel does internally.
	CPUWeight uint64
}

// selfLeaf is the cgroup, beside the manager's parent, into which New moves
// den's own processes when it must enable controllers on a delegated cgroup
// that holds them (cgroup v2 allows processes only in leaves).
const selfLeaf = "den-self"

// Manager creates groups under one parent cgroup, e.g. "den", in every
// hierarchy it uses.
type Manager struct {
	version Version
	// dirs maps each controller to the parent's directory in its hierarchy.
	// On v2 every controller maps to the same directory.
	dirs map[string]string
	// unified is the parent's directory in the v2 hierarchy: the only one
	// on v2; on a hybrid host used alongside v1 for cgroup.kill and
	// cgroup.freeze. Empty when there is none den can write.
	unified string
	// controllers lists the controllers that limits may use.
	controllers []string

	mu sync.Mutex // serialises mkdir and rmdir of directories
}

// New returns a Manager whose groups live under parent, a relative cgroup
// path such as "den", created if needed below Info.Base. The error wraps
// ErrUnavailable, with the reason and fix, when the host offers neither a
// writable (or delegated) cgroup v2 subtree nor cgroup v1 as root.
func New(parent string) (*Manager, error) {
	if err := validName(parent); err != nil || parent == selfLeaf {
		return nil, fmt.Errorf("cgroup: new %s: %w", parent, ErrInvalidName)
	}
	info := Detect()
	switch info.Backend {
	case V2:
		return newV2(info.Unified, info.Base, parent)
	case V1:
		return newV1(info, parent)
	default:
		return nil, fmt.Errorf("cgroup: new %s: %w: %s", parent, ErrUnavailable, info.Reason)
	}
}

// newV2 prepares parent below base in the v2 hierarchy mounted at mount,
// enabling every wanted controller available at base.
func newV2(mount, base, parent string) (*Manager, error) {
	baseDir := filepath.Join(mount, base)
	available, err := readFields(filepath.Join(baseDir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: new %s: %w", parent, err)
	}
	m := &Manager{version: V2, unified: filepath.Join(baseDir, parent)}
	for _, c := range wanted[:3] {
		if slices.Contains(available, c) {
			m.controllers = append(m.controllers, c)
		}
	}
	if err := m.enable(baseDir); errors.Is(err, unix.EBUSY) {
		// A delegated cgroup holding den itself: move its processes into
		// a leaf so that it may have controllers enabled for children.
		if err = evacuate(baseDir); err == nil {
			err = m.enable(baseDir)
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup: new %s: move den into %s: %w", parent, selfLeaf, err)
		}
	} else if err != nil {
		// Typically cpu refused (EINVAL) while realtime tasks run in
		// other cgroups: go on without the controllers that failed.
		m.controllers = slices.DeleteFunc(m.controllers, func(c string) bool {
			on, _ := readFields(filepath.Join(baseDir, "cgroup.subtree_control"))
			return !slices.Contains(on, c) && writeFile(filepath.Join(baseDir, "cgroup.subtree_control"), "+"+c) != nil
		})
	}
	if err := m.mkdirV2(baseDir, strings.Split(parent, "/"), false); err != nil {
		return nil, fmt.Errorf("cgroup: new %s: %w", parent, err)
	}
	m.dirs = map[string]string{}
	for _, c := range m.controllers {
		m.dirs[c] = m.unified
	}
	return m, nil
}

// newV1 prepares parent in each v1 hierarchy den wants, and in the v2
// hierarchy of a hybrid host when it is writable.
func newV1(info Info, parent string) (*Manager, error) {
	m := &Manager{version: V1, dirs: map[string]string{}}
	for _, c := range info.Controllers {
		dir := filepath.Join(info.Hierarchies[c], parent)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup: new %s: %w", parent, err)
		}
		m.dirs[c] = dir
		if c != "freezer" {
			m.controllers = append(m.controllers, c)
		}
	}
	if info.Unified != "" && writable(info.Unified) {
		dir := filepath.Join(info.Unified, parent)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			m.unified = dir
		}
	}
	return m, nil
}

// Version reports the hierarchy the Manager uses: V1 or V2.
func (m *Manager) Version() Version { return m.version }

// Controllers lists the controllers whose limits the Manager can apply.
func (m *Manager) Controllers() []string { return slices.Clone(m.controllers) }

// Create makes the group name, such as "agent-default/sess-123", with limits
// l. Intermediate groups are created as needed and shared; processes belong
// only in groups made by Create, never in their intermediates. It fails if
// the group exists, or if l needs a controller the Manager lacks
// (ErrNoController).
func (m *Manager) Create(name string, l Limits) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("cgroup: create %q: %w", name, err)
	}
	if err := m.check(l); err != nil {
		return nil, fmt.Errorf("cgroup: create %s: %w", name, err)
	}
	g := m.group(name)
	if err := m.create(g, l); err != nil {
		return nil, fmt.Errorf("cgroup: create %s: %w", name, err)
	}
	return g, nil
}

// create makes g's directories and applies l; on failure it removes what it
// made.
func (m *Manager) create(g *Group, l Limits) (err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dirs := g.Dirs()
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err == nil {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
	}
	defer func() {
		if err != nil {
			g.removeDirs()
		}
	}()
	if m.unified != "" {
		if err := m.mkdirV2(m.unified, strings.Split(g.name, "/"), true); err != nil {
			return err
		}
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := g.setLimits(l); err != nil {
		return err
	}
	if m.version == V2 {
		fd, err := unix.Open(g.unified, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: g.unified, Err: err}
		}
		g.fd = fd
	}
	return nil
}

// mkdirV2 creates elems below dir in the v2 hierarchy, enabling the
// Manager's controllers in each directory that gets a child. With leaf set,
// the last element must not exist yet.
func (m *Manager) mkdirV2(dir string, elems []string, leaf bool) error {
	for i, e := range elems {
		if m.version == V2 {
			if err := m.enable(dir); err != nil {
				return err
			}
		}
		dir = filepath.Join(dir, e)
		err := unix.Mkdir(dir, 0o755)
		if err == unix.EEXIST && !(leaf && i == len(elems)-1) {
			err = nil
		}
		if err != nil {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
		}
	}
	return nil
}

// enable turns on the Manager's controllers for the children of dir,
// skipping those already on.
func (m *Manager) enable(dir string) error {
	path := filepath.Join(dir, "cgroup.subtree_control")
	on, err := readFields(path)
	if err != nil {
		return err
	}
	for _, c := range m.controllers {
		if slices.Contains(on, c) {
			continue
		}
		if err := writeFile(path, "+"+c); err != nil {
			return err
		}
	}
	return nil
}

// evacuate moves every process of dir into dir/den-self.
func evacuate(dir string) error {
	leaf := filepath.Join(dir, selfLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	pids, err := readFields(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range pids {
		err := writeFile(filepath.Join(leaf, "cgroup.procs"), pid)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

func (m *Manager) check(l Limits) error {
	if l.MemoryBytes < 0 || l.Pids < 0 {
		return fmt.Errorf("negative limit in %+v", l)
	}
	if l.CPUWeight > 10000 {
		return fmt.Errorf("cpu weight %d out of range 1..10000", l.CPUWeight)
	}
	for c, set := range map[string]bool{"memory": l.MemoryBytes > 0, "pids": l.Pids > 0, "cpu": l.CPUWeight > 0} {
		if set && !slices.Contains(m.controllers, c) {
			return fmt.Errorf("%s limit: %w", c, ErrNoController)
		}
	}
	return nil
}

// group returns the Group for name without touching the filesystem.
func (m *Manager) group(name string) *Group {
	g := &Group{m: m, name: name, fd: -1}
	if m.unified != "" {
		g.unified = filepath.Join(m.unified, name)
	}
	return g
}

// RemoveAll kills and removes every group under the Manager's parent, then
// the parent itself. Den calls it at startup to clear groups left by a
// crash; the Manager is unusable afterwards.
func (m *Manager) RemoveAll() error {
	var errs []error
	for _, dir := range m.parentDirs() {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				if err := m.group(e.Name()).Remove(); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, dir := range m.parentDirs() {
		if err := removeTree(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup: remove all: %w", err)
	}
	return nil
}

// parentDirs lists the parent's directory in every hierarchy, once each.
func (m *Manager) parentDirs() []string {
	var dirs []string
	for _, c := range wanted {
		if d := m.dirs[c]; d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if m.unified != "" && !slices.Contains(dirs, m.unified) {
		dirs = append(dirs, m.unified)
	}
	return dirs
}

// validName accepts relative slash-separated paths of elements made of
// letters, digits, '-', '_' and '.', none starting with '.', and none
// named like a cgroup interface file (which contain a '.' after a
// controller name, so a leading "cgroup." or controller prefix is refused).
func validName(name string) error {
	if name == "" || len(name) > 1024 {
		return ErrInvalidName
	}
	for _, e := range strings.Split(name, "/") {
		if e == "" || e[0] == '.' || len(e) > 255 {
			return ErrInvalidName
		}
		for _, r := range e {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				return ErrInvalidName
			}
		}
		if prefix, _, ok := strings.Cut(e, "."); ok && isInterfacePrefix(prefix) {
			return ErrInvalidName
		}
	}
	return nil
}

func isInterfacePrefix(p string) bool {
	switch p {
	case "cgroup", "cpu", "cpuacct", "cpuset", "memory", "pids", "io", "blkio",
		"freezer", "devices", "hugetlb", "rdma", "misc", "notify_on_release", "tasks":
		return true
	}
	return false
}

// shares maps a v2 cpu.weight to a v1 cpu.shares the way the kernel maps
// both to a scheduler weight: 100 is 1024.
func shares(weight uint64) string {
	return strconv.FormatUint(min(max(weight*1024/100, 2), 262144), 10)
}
