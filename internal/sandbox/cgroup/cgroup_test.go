package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const mib = 1 << 20

// needRoot skips tests that create cgroups when they cannot: they run as
// root here and in CI.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		const msg = "creating cgroups needs root (or a delegated cgroup v2 subtree); run the tests as root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg) // CI runs as root: skipping would hide the limits' tests
		}
		t.Skip(msg)
	}
}

// newManager returns a Manager under a parent unique to the test, removed
// with everything in it when the test ends.
func newManager(t testing.TB) *Manager {
	t.Helper()
	m, err := New(fmt.Sprintf("den-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	cleanupManager(t, m)
	return m
}

func cleanupManager(t testing.TB, m *Manager) {
	t.Cleanup(func() {
		dirs := m.parentDirs()
		if err := m.RemoveAll(); err != nil {
			t.Error(err)
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s left behind (stat: %v)", d, err)
			}
		}
	})
}

func create(t testing.TB, m *Manager, name string, l Limits) *Group {
	t.Helper()
	g, err := m.Create(name, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// proc is a shell started by startBlocked.
type proc struct {
	cmd  *exec.Cmd
	w    *os.File      // write end of the shell's stdin
	done chan struct{} // closed when Wait returns
	err  error         // Wait's result, once done is closed
}

// release lets the shell run its script.
func (p *proc) release() {
	io.WriteString(p.w, "go\n")
	p.w.Close()
}

// wait returns the shell's exit status.
func (p *proc) wait() error {
	<-p.done
	return p.err
}

// startBlocked runs script under /bin/sh in g. The shell first reads a line
// from stdin, so it is in the group before it does anything; release lets
// it go. Its stderr goes to a file, not a pipe, so that Wait does not wait
// for grandchildren holding the pipe open.
func startBlocked(t *testing.T, g *Group, script string) *proc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command("/bin/sh", "-c", "read go; "+script), w: w, done: make(chan struct{})}
	p.cmd.Stdin, p.cmd.Stderr = r, stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		w.Close()
		g.Kill()
		<-p.done
		if b, _ := os.ReadFile(stderr.Name()); len(b) > 0 {
			t.Logf("stderr of %q: %.300s", script, b)
		}
		stderr.Close()
	})
	if err := g.Add(p.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreateSetsLimits(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	t.Logf("backend %v, controllers %v", m.Version(), m.Controllers())
	g := create(t, m, "agent-default/sess-1", Limits{MemoryBytes: 64 * mib, Pids: 50, CPUWeight: 200})

	want := map[string]string{"pids/pids.max": "50"}
	if m.Version() == V2 {
		want["memory/memory.max"] = strconv.Itoa(64 * mib)
		want["cpu/cpu.weight"] = "200"
	} else {
		want["memory/memory.limit_in_bytes"] = strconv.Itoa(64 * mib)
		want["cpu/cpu.shares"] = "2048"
	}
	for key, value := range want {
		controller, file, _ := strings.Cut(key, "/")
		got, err := readString(filepath.Join(g.dir(controller), file))
		if err != nil {
			t.Error(err)
		} else if got != value {
			t.Errorf("%s = %s, want %s", file, got, value)
		}
	}
	for _, d := range g.Dirs() {
		if !strings.HasSuffix(d, "/agent-default/sess-1") {
			t.Errorf("dir %s does not end in the group's name", d)
		}
	}
	_, hasFD := g.FD()
	if hasFD != (m.Version() == V2) {
		t.Errorf("FD ok = %v on %v", hasFD, m.Version())
	}
}

func TestCreateRejects(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	for _, name := range []string{"../x", "/etc", "a/../../x", ""} {
		if _, err := m.Create(name, Limits{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Create(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := m.Create("bad", Limits{CPUWeight: 10001}); err == nil {
		t.Error("Create with CPUWeight 10001 succeeded")
	}

	// A second Create of a live group fails and leaves the first alone.
	g := create(t, m, "twice", Limits{Pids: 10})
	p := startBlocked(t, g, "sleep 100")
	p.release()
	if _, err := m.Create("twice", Limits{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create = %v, want fs.ErrExist", err)
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("second Create disturbed the first group's process: %v", err)
	}
	if procs, _ := g.Procs(); len(procs) == 0 {
		t.Error("first group lost its processes")
	}
}

// TestPidsLimit releases a shell that starts 200 background sleeps in a
// group limited to 50 pids: the kernel must refuse forks past 50, while
// den's own forks still work.
func TestPidsLimit(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	const limit = 50
	g := create(t, m, "pids", Limits{Pids: limit, MemoryBytes: 64 * mib})
	p := startBlocked(t, g, `i=0; while [ $i -lt 200 ]; do sleep 100 & i=$((i+1)); done`)
	p.release()

	var exited bool
	var st Stats
	for i := 0; i < 10000 && !exited; i++ {
		var err error
		if st, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.Pids > limit {
			t.Fatalf("pids.current = %d, above the limit %d", st.Pids, limit)
		}
		select {
		case <-p.done:
			// dash gives up at the first failed fork.
			exited = true
			if p.err == nil {
				t.Error("the shell started 200 processes under a limit of 50")
			}
		default:
			time.Sleep(time.Millisecond)
		}
	}
	if !exited {
		t.Fatal("the shell never finished starting processes")
	}
	if st, _ = g.Stats(); st.ForkFailures == 0 {
		t.Errorf("no fork failed inside the group: %+v", st)
	}
	if st.PidsPeak > limit {
		t.Errorf("pids.peak = %d, above the limit %d", st.PidsPeak, limit)
	}
	if procs, _ := g.Procs(); len(procs) < limit-5 {
		t.Errorf("only %d sleeps running; expected the group full (%+v)", len(procs), st)
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("den cannot fork while the group is full: %v", err)
	}
	t.Logf("stats: %+v", st)
}

// TestMemoryLimit makes tail hold 200 MiB in a group limited to 64 MiB: the
// OOM killer must kill it, not the test.
func TestMemoryLimit(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	g := create(t, m, "memory", Limits{MemoryBytes: 64 * mib, Pids: 50})
	p := startBlocked(t, g, `head -c 200M /dev/zero | tail`)
	p.release()
	err := p.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("memory hog exited with %v, want an OOM kill", err)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shell: %v; stats: %+v", exit, st)
	if st.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want at least 1", st.OOMKills)
	}
	if st.MemoryPeakBytes > 64*mib {
		t.Errorf("memory peak %d above the 64 MiB limit", st.MemoryPeakBytes)
	}
}

// TestKillForkBomb lets a real fork bomb fill a group, then kills it: with
// cgroup.kill where the kernel has one, and on v1 also with the freezer
// alone, as on a host without a v2 hierarchy.
func TestKillForkBomb(t *testing.T) {
	needRoot(t)
	t.Run("default", func(t *testing.T) { testKillForkBomb(t, newManager(t)) })
	t.Run("v1 freezer only", func(t *testing.T) {
		m := newManager(t)
		if m.Version() != V1 || m.dirs["freezer"] == "" {
			t.Skip("needs the v1 backend with a freezer hierarchy")
		}
		unified := m.unified
		m.unified = ""                            // as if no v2 hierarchy were mounted
		t.Cleanup(func() { m.unified = unified }) // before newManager's RemoveAll
		testKillForkBomb(t, m)
	})
}

func testKillForkBomb(t *testing.T, m *Manager) {
	const limit = 64
	g := create(t, m, "bomb", Limits{Pids: limit, MemoryBytes: 256 * mib})
	// Each level of the bomb forks two more and then stays (sleep), so
	// that it is still running, holding the group full, when its forks
	// fail; a bomb whose shells exit on "Cannot fork" may have died
	// out by the time it is looked at, on a loaded machine.
	startBlocked(t, g, `b() { b | b & sleep 100; }; b`).release()

	full := false
	for i := 0; i < 10000 && !full; i++ {
		st, err := g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Pids > limit {
			t.Fatalf("pids.current = %d, above the limit %d", st.Pids, limit)
		}
		full = st.ForkFailures > 0
		time.Sleep(time.Millisecond)
	}
	if !full {
		t.Fatal("the fork bomb never reached the pids limit")
	}
	// Orphans of the bomb that init has not reaped yet are zombies: they
	// count against pids.max but are no longer in cgroup.procs.
	if procs, _ := g.Procs(); len(procs) == 0 {
		t.Error("the fork bomb is not running")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if procs, err := g.Procs(); err != nil || len(procs) > 0 {
		t.Fatalf("after Kill: procs %v, err %v", procs, err)
	}
}

func TestRemove(t *testing.T) {
	needRoot(t)
	m := newManager(t)
	g, err := m.Create("agent-x/sess-1", Limits{Pids: 20})
	if err != nil {
		t.Fatal(err)
	}
	sibling := create(t, m, "agent-x/sess-2", Limits{})
	p := startBlocked(t, g, "sleep 100 & sleep 100")
	p.release()

	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if p.wait() == nil {
		t.Error("the group's shell survived Remove")
	}
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind (stat: %v)", d, err)
		}
		if _, err := os.Stat(filepath.Dir(d)); err != nil {
			t.Errorf("intermediate %s removed while a sibling uses it: %v", filepath.Dir(d), err)
		}
	}
	if err := g.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}

	if err := sibling.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range sibling.Dirs() {
		if _, err := os.Stat(filepath.Dir(d)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("unused intermediate %s left behind (stat: %v)", filepath.Dir(d), err)
		}
	}
}

// TestStartInGroup starts a process directly inside a v2 group with
// CLONE_INTO_CGROUP. On a hybrid host it uses the v2 hierarchy without
// controllers, which still has cgroup.kill and cgroup.freeze.
func TestStartInGroup(t *testing.T) {
	needRoot(t)
	info := Detect()
	var m *Manager
	parent := fmt.Sprintf("den-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	switch {
	case info.Backend == V2:
		m = newManager(t)
	case info.Unified != "" && writable(info.Unified):
		var err error
		if m, err = newV2(info.Unified, "/", parent); err != nil {
			t.Fatal(err)
		}
		cleanupManager(t, m)
	default:
		if os.Getenv("CI") == "true" {
			t.Fatal("no writable cgroup v2 hierarchy as root")
		}
		t.Skip("no writable cgroup v2 hierarchy")
	}
	g := create(t, m, "clone/sess-1", Limits{})
	fd, ok := g.FD()
	if !ok {
		t.Fatal("FD not available on v2")
	}
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() { g.Kill(); <-done })

	self, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := parseProcCgroup(bytes.NewReader(self))
	want := strings.TrimPrefix(g.unified, info.Unified)
	if paths[""] != want {
		t.Errorf("child's v2 cgroup = %q, want %q", paths[""], want)
	}
	procs, err := g.Procs()
	if err != nil || len(procs) == 0 {
		t.Fatalf("Procs = %v, %v", procs, err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if <-done; waitErr == nil {
		t.Error("shell survived Kill")
	}
	if procs, _ := g.Procs(); len(procs) > 0 {
		t.Errorf("after Kill: %v", procs)
	}
}

func BenchmarkCreateRemove(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("creating cgroups needs root")
	}
	m := newManager(b)
	l := Limits{MemoryBytes: 256 * mib, Pids: 100, CPUWeight: 100}
	for i := 0; b.Loop(); i++ {
		g, err := m.Create(fmt.Sprintf("agent/sess-%d", i), l)
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}
