package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/cgroup"
)

// Browser is an agent's web browser: at most one Chromium, started when
// a session first needs it and stopped when idle, shared by the agent's
// sessions, each with tabs of its own. Its profile (cookies, logins)
// persists in Options.Dir.
//
// Chromium runs in the computer of the session that started it: in its
// network namespace, so that localhost is that computer's. A session
// whose computer is another (an agent's sessions each run their own)
// moves it there, and the tabs of the other sessions close; each
// session's next result says so.
type Browser struct {
	o      Options
	bin    binaries
	binErr error

	life sync.Mutex // serialises starting and stopping Chromium

	mu       sync.Mutex // guards the fields below
	chrome   *chromium  // nil when not running
	gen      int        // counts Chromium's starts; tabs of an older one are gone
	ends     map[int]string
	lastUse  time.Time
	inUse    int // actions running
	sessions map[string]*Session
	closed   bool

	quit chan struct{} // ends the janitor and the watchers
	wg   sync.WaitGroup

	noGroup sync.Once // logs why Chromium runs without a group of its own
}

// New returns an agent's browser. It starts nothing: Chromium starts
// with the first action that needs it. Missing programs are reported by
// Check and by each action's result, not here.
func New(o Options) (*Browser, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	b := &Browser{o: o, sessions: map[string]*Session{}, ends: map[int]string{}, quit: make(chan struct{})}
	b.bin, b.binErr = findBinaries(&b.o)
	b.wg.Add(1)
	go b.janitor()
	return b, nil
}

// Check reports whether the browser can run on this host: the programs
// it needs, found or not, for den doctor.
func (b *Browser) Check() []sandbox.Check {
	var out []sandbox.Check
	for _, p := range []struct{ name, path, given, pkg string }{
		{"chromium", b.bin.chromium, b.o.Chromium, "chromium-headless-shell"},
		{"bwrap (browser)", b.bin.bwrap, b.o.Bwrap, "bubblewrap"},
		{"nsenter (browser)", b.bin.nsenter, b.o.Nsenter, "util-linux"},
	} {
		c := sandbox.Check{Name: p.name, OK: p.path != "", Detail: p.path}
		if !c.OK {
			c.Detail = "not found"
			c.Fix = "install the Debian package " + p.pkg
		}
		out = append(out, c)
	}
	return out
}

// Session returns the browser of a session: its handle for actions.
// The same id gives the same handle; env replaces the one given before
// (a session's computer may have restarted since).
func (b *Browser) Session(id string, env Env) (*Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	s := b.sessions[id]
	if s == nil {
		s = &Session{b: b, id: id, nextTab: 1}
		b.sessions[id] = s
	}
	s.setEnv(env)
	return s, nil
}

// Running reports whether Chromium runs.
func (b *Browser) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.chrome != nil
}

// Close stops Chromium and ends every session's browser.
func (b *Browser) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	sessions := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()
	close(b.quit)
	// Chromium first, so that running actions end at once.
	b.life.Lock()
	b.stopLocked("the browser was closed")
	b.life.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	b.wg.Wait()
	return nil
}

// ensure returns the running Chromium for s's computer, starting it (or
// moving it from another computer) when needed.
func (b *Browser) ensure(ctx context.Context, s *Session, p *place) (*chromium, int, error) {
	if b.binErr != nil {
		return nil, 0, b.binErr
	}
	b.life.Lock()
	defer b.life.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, 0, ErrClosed
	}
	c, gen := b.chrome, b.gen
	b.lastUse = time.Now()
	b.mu.Unlock()
	if c != nil && !c.isLost() && c.place.same(p) {
		return c, gen, nil
	}
	if c != nil {
		why := "the browser stopped unexpectedly (it crashed or was killed); den started it again"
		if !c.isLost() {
			why = fmt.Sprintf("the agent's browser moved to the computer of session %s (localhost there is that computer's)", s.id)
		}
		b.stopLocked(why)
	}
	own, err := findPlace(s.computer())
	if err != nil {
		return nil, 0, err
	}
	if !own.same(p) {
		own.close()
		return nil, 0, fmt.Errorf("%w: it restarted while den started the browser", ErrNoComputer)
	}
	c, err = startChromium(ctx, &b.o, b.bin, own, b.newGroup())
	if err != nil {
		own.close()
		return nil, 0, err
	}
	if err := c.setup(ctx); err != nil {
		c.close()
		return nil, 0, err
	}
	b.mu.Lock()
	b.chrome = c
	b.gen++
	gen = b.gen
	b.mu.Unlock()
	b.record(c)
	b.wg.Add(2)
	go b.watch(c)
	go b.handleEvents(c, gen)
	return c, gen, nil
}

// newGroup makes the control group of the next Chromium, or returns nil
// (having logged why, once) when there can be none.
func (b *Browser) newGroup() *cgroup.Group {
	if b.o.Group == nil {
		return nil
	}
	g, err := b.o.Group(b.o.limits())
	if err != nil {
		b.noGroup.Do(func() {
			b.o.logf("Chromium runs without a memory limit of its own: %v", err)
		})
		return nil
	}
	return g
}

// stopLocked stops the running Chromium, if any, and records why for
// the sessions whose tabs it takes. The caller holds b.life.
func (b *Browser) stopLocked(why string) {
	b.mu.Lock()
	c := b.chrome
	if c != nil {
		b.chrome = nil
		b.ends[b.gen] = why
		delete(b.ends, b.gen-16)
	}
	b.mu.Unlock()
	if c != nil {
		c.close()
		os.Remove(b.pidFile())
	}
}

// retire stops c if it is still the running Chromium.
func (b *Browser) retire(c *chromium, why string) {
	b.life.Lock()
	defer b.life.Unlock()
	b.mu.Lock()
	current := b.chrome == c
	b.mu.Unlock()
	if current {
		b.stopLocked(why)
	} else {
		c.close()
	}
}

// endReason says why the Chromium of generation gen stopped.
func (b *Browser) endReason(gen int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if why, ok := b.ends[gen]; ok {
		return why
	}
	return "the browser restarted"
}

// current returns the running Chromium and its generation.
func (b *Browser) current() (*chromium, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.chrome, b.gen
}

// watch stops c when it exits or crashes, or when its computer stops
// (its network went with it).
func (b *Browser) watch(c *chromium) {
	defer b.wg.Done()
	gone := make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if c.place.wait() {
			close(gone)
		}
	}()
	var why string
	select {
	case <-c.lost():
		why = "the browser stopped unexpectedly (it crashed or was killed); den started it again"
	case <-gone:
		why = "the computer the browser ran in stopped; den started the browser again"
	case <-b.quit:
		return
	}
	b.retire(c, why)
}

// janitor closes idle tabs and stops an idle Chromium.
func (b *Browser) janitor() {
	defer b.wg.Done()
	tick := min(30*time.Second, b.o.TabIdle/2, b.o.Idle/2)
	tk := time.NewTicker(max(tick, 10*time.Millisecond))
	defer tk.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-tk.C:
		}
		b.mu.Lock()
		sessions := make([]*Session, 0, len(b.sessions))
		for _, s := range b.sessions {
			sessions = append(sessions, s)
		}
		idle := b.chrome != nil && b.inUse == 0 && time.Since(b.lastUse) > b.o.Idle
		b.mu.Unlock()
		for _, s := range sessions {
			s.closeIdleTabs(b.o.TabIdle)
		}
		if idle {
			b.life.Lock()
			b.mu.Lock()
			still := b.chrome != nil && b.inUse == 0 && time.Since(b.lastUse) > b.o.Idle
			b.mu.Unlock()
			if still {
				b.stopLocked(fmt.Sprintf("the browser was stopped after %v without use, and started again", b.o.Idle))
			}
			b.life.Unlock()
		}
	}
}

// use counts an action in (+1) or out (-1): Chromium is not stopped for
// idleness while one runs.
func (b *Browser) use(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse += n
	b.lastUse = time.Now()
}

// forget drops a closed session.
func (b *Browser) forget(s *Session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[s.id] == s {
		delete(b.sessions, s.id)
	}
}

// sessionOf finds the session and tab a page target belongs to.
func (b *Browser) sessionOf(target string) (*Session, *tab) {
	b.mu.Lock()
	sessions := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()
	for _, s := range sessions {
		if t := s.tabByTarget(target); t != nil {
			return s, t
		}
	}
	return nil, nil
}

// Memory is what Chromium's processes use.
type Memory struct {
	Running   bool
	Processes int
	// RSS sums the processes' resident memory (shared pages counted in
	// each); PSS shares them out, so its sum is what the browser costs.
	RSS, PSS int64
}

// Memory measures the running Chromium's processes.
func (b *Browser) Memory() (Memory, error) {
	c, _ := b.current()
	if c == nil {
		return Memory{}, nil
	}
	return treeMemory(c.cmd.Process.Pid)
}

// pidFile records the running Chromium, for MemoryAt.
func (b *Browser) pidFile() string { return filepath.Join(b.o.Dir, "running") }

// record writes which process is c's sandbox, and when it started, so
// that another den process (den doctor) can find it and never mistake
// a reused pid for it. Only den writes in Options.Dir; Chromium sees
// its subfolders only.
func (b *Browser) record(c *chromium) {
	pid := c.cmd.Process.Pid
	if info, ok := sandbox.ReadProc(pid); ok {
		os.WriteFile(b.pidFile(), fmt.Appendf(nil, "%d %d\n", pid, info.Start), 0o600)
	}
}

// MemoryAt measures the Chromium of the browser whose Options.Dir is
// dir, run by any den process: not Running when none runs.
func MemoryAt(dir string) (Memory, error) {
	b, err := os.ReadFile(filepath.Join(dir, "running"))
	if errors.Is(err, os.ErrNotExist) {
		return Memory{}, nil
	} else if err != nil {
		return Memory{}, err
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
		return Memory{}, fmt.Errorf("browser: %s: %v", filepath.Join(dir, "running"), err)
	}
	if info, ok := sandbox.ReadProc(pid); !ok || info.Start != start {
		return Memory{}, nil // it ended without den removing the record
	}
	return treeMemory(pid)
}

// treeMemory sums the memory of root and its descendants.
func treeMemory(root int) (Memory, error) {
	var procs []sandbox.ProcInfo
	for _, pid := range sandbox.AllPids() {
		if p, ok := sandbox.ReadProc(pid); ok {
			procs = append(procs, p)
		}
	}
	m := Memory{Running: true}
	for _, pid := range append([]int{root}, sandbox.Descendants(procs, root)...) {
		rss, pss, err := procMemory(pid)
		if err != nil {
			continue
		}
		m.Processes++
		m.RSS += rss
		m.PSS += pss
	}
	if m.Processes == 0 {
		return m, errors.New("browser: Chromium's processes could not be read")
	}
	return m, nil
}

// procMemory reads a process's resident and proportional memory in
// bytes (smaps_rollup; without it, PSS is RSS).
func procMemory(pid int) (rss, pss int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		b, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return 0, 0, err
		}
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:", "VmRSS:":
			rss = n << 10
		case "Pss:":
			pss = n << 10
		}
	}
	if pss == 0 {
		pss = rss
	}
	return rss, pss, nil
}
