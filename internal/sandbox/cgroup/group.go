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
	"time"

	"golang.org/x/sys/unix"
)

// killRounds bounds the freeze-kill-thaw sweeps of Kill. Each round sleeps
// a little longer, up to 20ms, so Kill gives up after about four seconds of
// processes that will not die (uninterruptible sleep, a wedged filesystem).
const killRounds = 200

// Group is one cgroup made by Manager.Create, present in every hierarchy
// the Manager uses. Its methods may be called concurrently.
type Group struct {
	m    *Manager
	name string
	// unified is the group's v2 directory, or "" (see Manager.unified).
	unified string

	mu sync.Mutex
	fd int // open v2 directory on V2, -1 otherwise or once removed
}

// Stats is a snapshot of a group's usage. Counters the host does not
// report are zero.
type Stats struct {
	// MemoryBytes is the memory charged to the group now, page cache included.
	MemoryBytes int64
	// MemoryPeakBytes is the most memory ever charged to the group.
	MemoryPeakBytes int64
	// Pids is the number of processes and threads in the group.
	Pids int64
	// PidsPeak is the most processes and threads the group ever held.
	PidsPeak int64
	// OOMKills counts processes the OOM killer killed for the memory limit.
	OOMKills int64
	// ForkFailures counts forks refused because of the pids limit.
	ForkFailures int64
}

// Name returns the name the group was created with.
func (g *Group) Name() string { return g.name }

// Dirs returns the group's directory in every hierarchy it lives in: one
// on v2; on v1 one per controller hierarchy, plus the v2 directory of a
// hybrid host.
func (g *Group) Dirs() []string {
	dirs := g.m.parentDirs()
	for i, d := range dirs {
		dirs[i] = filepath.Join(d, g.name)
	}
	return dirs
}

// FD returns an open descriptor of the group's v2 directory, for starting a
// process directly inside the group:
//
//	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
//
// It reports false on v1, where a process must be added with Add before it
// is let run. The descriptor belongs to the group and is closed by Remove.
func (g *Group) FD() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fd, g.fd >= 0
}

// Add moves process pid, with its threads, into the group. Children it
// forks afterwards are born inside. On v1 a process that forks while Add
// runs may leave a child outside some hierarchies, so start processes
// blocked (on a pipe, say), Add them, then release them.
func (g *Group) Add(pid int) error {
	for _, dir := range g.Dirs() {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup: add %d to %s: %w", pid, g.name, err)
		}
	}
	return nil
}

// Procs returns the processes in the group and in the groups below it, in
// ascending order.
func (g *Group) Procs() ([]int, error) {
	var pids []int
	for _, dir := range g.Dirs() {
		var err error
		if pids, err = readProcs(dir, pids); err != nil {
			return nil, fmt.Errorf("cgroup: procs %s: %w", g.name, err)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// Kill kills every process in the group and the groups below it, and
// returns once they are gone, or with ErrNotEmpty when some survive a
// bounded number of attempts. It writes cgroup.kill where the kernel has
// one (v2, 5.14+), which no fork can escape; otherwise, and to sweep up
// after it, it freezes the group, sends SIGKILL to each process and thaws,
// until the group is empty.
func (g *Group) Kill() error {
	if err := g.kill(); err != nil {
		return fmt.Errorf("cgroup: kill %s: %w", g.name, err)
	}
	return nil
}

func (g *Group) kill() error {
	killFile := ""
	if g.unified != "" {
		if p := filepath.Join(g.unified, "cgroup.kill"); exists(p) {
			killFile = p
		}
	}
	for round := range killRounds {
		if killFile != "" {
			if err := writeFile(killFile, "1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		pids, err := g.Procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if killFile == "" || round > 0 {
			if err := g.freezeAndKill(); err != nil {
				return err
			}
		}
		time.Sleep(time.Duration(min(round+1, 20)) * time.Millisecond)
	}
	pids, err := g.Procs()
	if err != nil {
		return err
	}
	return fmt.Errorf("%d processes left (%v): %w", len(pids), pids, ErrNotEmpty)
}

// freezeAndKill stops the group, so that nothing in it forks or exits while
// it is listed, then sends SIGKILL to every process and thaws it so the
// signals are delivered.
func (g *Group) freezeAndKill() error {
	thaw := g.freeze()
	defer thaw()
	pids, err := g.Procs()
	if err != nil {
		return err
	}
	self := os.Getpid()
	for _, pid := range pids {
		if pid <= 1 || pid == self {
			continue // never signal init, a process group, or den itself
		}
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// freeze freezes the group with v2's cgroup.freeze or the v1 freezer,
// waits a bounded time for it to take, and returns the function that thaws
// it. Without either it does nothing.
func (g *Group) freeze() (thaw func()) {
	const polls = 100
	if g.unified != "" {
		if p := filepath.Join(g.unified, "cgroup.freeze"); exists(p) && writeFile(p, "1") == nil {
			for range polls {
				if frozen, _ := readKey(filepath.Join(g.unified, "cgroup.events"), "frozen"); frozen == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			return func() { writeFile(p, "0") }
		}
	}
	if d := g.dir("freezer"); d != "" {
		p := filepath.Join(d, "freezer.state")
		if writeFile(p, "FROZEN") == nil {
			for range polls {
				if s, _ := readString(p); s == "FROZEN" {
					break
				}
				time.Sleep(time.Millisecond)
			}
			return func() { writeFile(p, "THAWED") }
		}
	}
	return func() {}
}

// Stats reports the group's usage.
func (g *Group) Stats() (Stats, error) {
	var s Stats
	var errs []error
	// read sets *dst from file in dir: the whole file, or the line for key.
	read := func(dst *int64, dir, file, key string) {
		path := filepath.Join(dir, file)
		readValue := func() (int64, error) { return readInt(path) }
		if key != "" {
			readValue = func() (int64, error) { return readKey(path, key) }
		}
		v, err := readValue()
		switch {
		case err == nil:
			*dst = v
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	if d := g.dir("memory"); d != "" {
		if g.m.version == V2 {
			read(&s.MemoryBytes, d, "memory.current", "")
			read(&s.MemoryPeakBytes, d, "memory.peak", "")
			read(&s.OOMKills, d, "memory.events", "oom_kill")
		} else {
			read(&s.MemoryBytes, d, "memory.usage_in_bytes", "")
			read(&s.MemoryPeakBytes, d, "memory.max_usage_in_bytes", "")
			read(&s.OOMKills, d, "memory.oom_control", "oom_kill")
		}
	}
	if d := g.dir("pids"); d != "" {
		read(&s.Pids, d, "pids.current", "")
		read(&s.PidsPeak, d, "pids.peak", "")
		read(&s.ForkFailures, d, "pids.events", "max")
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("cgroup: stats %s: %w", g.name, err)
	}
	return s, nil
}

// Remove kills whatever runs in the group, then removes it, the groups
// below it, and the intermediate groups Create made that nothing else uses,
// from every hierarchy. Removing a removed group does nothing.
func (g *Group) Remove() error {
	if err := g.kill(); err != nil {
		return fmt.Errorf("cgroup: remove %s: %w", g.name, err)
	}
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	if err := g.removeDirs(); err != nil {
		return fmt.Errorf("cgroup: remove %s: %w", g.name, err)
	}
	return nil
}

// removeDirs closes the group's descriptor and removes its directories and
// unused intermediates. The caller holds g.m.mu.
func (g *Group) removeDirs() error {
	g.mu.Lock()
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	g.mu.Unlock()
	depth := strings.Count(g.name, "/")
	for _, dir := range g.Dirs() {
		if err := removeTree(dir); err != nil {
			return err
		}
		for range depth {
			dir = filepath.Dir(dir)
			if unix.Rmdir(dir) != nil {
				break // in use by a sibling, or already gone
			}
		}
	}
	return nil
}

// setLimits writes l into the group's controller files.
func (g *Group) setLimits(l Limits) error {
	type setting struct {
		controller, file, value string
		optional                bool // absent on some kernels and configurations
	}
	var settings []setting
	v2 := g.m.version == V2
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if v2 {
			settings = append(settings,
				setting{"memory", "memory.max", v, false},
				setting{"memory", "memory.swap.max", "0", true})
		} else {
			// memsw is memory plus swap, and may not go below memory.
			settings = append(settings,
				setting{"memory", "memory.limit_in_bytes", v, false},
				setting{"memory", "memory.memsw.limit_in_bytes", v, true})
		}
	}
	if l.Pids > 0 {
		settings = append(settings, setting{"pids", "pids.max", strconv.FormatInt(l.Pids, 10), false})
	}
	if l.CPUWeight > 0 {
		if v2 {
			settings = append(settings, setting{"cpu", "cpu.weight", strconv.FormatUint(l.CPUWeight, 10), false})
		} else {
			settings = append(settings, setting{"cpu", "cpu.shares", shares(l.CPUWeight), false})
		}
	}
	for _, s := range settings {
		err := writeFile(filepath.Join(g.dir(s.controller), s.file), s.value)
		if err != nil && !(s.optional && errors.Is(err, fs.ErrNotExist)) {
			return err
		}
	}
	return nil
}

// dir returns the group's directory in controller's hierarchy, or "".
func (g *Group) dir(controller string) string {
	if d := g.m.dirs[controller]; d != "" {
		return filepath.Join(d, g.name)
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
