package browser

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/cgroup"
)

// TestMemoryLimit: Chromium runs in a control group of its own with the
// memory limit; a page that eats more gets its renderer killed there,
// the action ends at once saying so, and the next action works in a new
// tab without reopening the page. The group goes when Chromium stops.
func TestMemoryLimit(t *testing.T) {
	const limit = 256 << 20
	var f *fixture
	var groups []*cgroup.Group
	f = newFixture(t, func(o *Options) {
		o.Memory = limit
		o.Group = func(l cgroup.Limits) (*cgroup.Group, error) {
			g, err := f.computer.BrowserGroup(l)
			if err == nil {
				groups = append(groups, g)
			}
			return g, err
		}
	})
	if g, err := f.computer.BrowserGroup(cgroup.Limits{}); err != nil {
		if os.Getenv("CI") == "true" || !errors.Is(err, cgroup.ErrUnavailable) {
			t.Fatalf("CI runs den as root with cgroups: %v", err)
		}
		t.Skipf("no cgroups: %v", err)
	} else {
		g.Remove()
	}

	f.ok(t, Action{Name: "navigate", URL: f.base + "/hog"})
	if len(groups) != 1 {
		t.Fatalf("Chromium started with %d groups, want 1", len(groups))
	}
	g := groups[0]
	if !strings.HasPrefix(g.Name(), "agent-alice/browser."+strconv.Itoa(os.Getpid())+".") {
		t.Errorf("group %s: want agent-alice/browser.PID.RANDOM, which the sweep parses", g.Name())
	}
	// Every process of Chromium is in the group, in every hierarchy.
	procs := chromiumProcs(t, f.b)
	for _, dir := range g.Dirs() {
		in := readProcs(t, dir)
		for _, pid := range procs {
			if running(pid) && !slices.Contains(in, pid) {
				t.Errorf("process %d is not in %s (%v)", pid, dir, in)
			}
		}
	}
	if got := memoryLimit(t, g); got != limit {
		t.Errorf("the group's memory limit is %d, want %d", got, limit)
	}

	start := time.Now()
	r := f.do(t, Action{Name: "click", Selector: "button"})
	t.Logf("the click ended after %v: %s: %s", time.Since(start).Round(time.Millisecond), r.Code, r.Text())
	if strings.HasPrefix(r.Title, "Ate") {
		t.Fatalf("the page kept 1 GiB under a limit of 256 MiB: %s", r.Text())
	}
	if r.Code != Failed || !strings.Contains(r.Message, "ran out of memory") || !strings.Contains(r.Message, "256 MiB") {
		t.Errorf("the click's result does not say the tab ran out of memory: %s: %s", r.Code, r.Text())
	}
	if s, err := g.Stats(); err != nil || s.OOMKills < 1 {
		t.Errorf("the group counts %d OOM kills (%v)", s.OOMKills, err)
	}

	r = f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	notes := strings.Join(r.Notes, "\n")
	if r.Title != "Sign in" || !strings.Contains(notes, "the tab ran out of memory; den closed it") || strings.Contains(notes, "reopened") {
		t.Errorf("after the OOM kill: %s", r.Text())
	}

	f.b.Close()
	for _, g := range groups {
		for _, dir := range g.Dirs() {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s is still there after the browser closed", dir)
			}
		}
	}
}

func readProcs(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	return pids
}

// memoryLimit reads the group's memory limit, v2 or v1.
func memoryLimit(t *testing.T, g *cgroup.Group) int64 {
	t.Helper()
	for _, dir := range g.Dirs() {
		for _, name := range []string{"memory.max", "memory.limit_in_bytes"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					t.Fatalf("%s/%s: %q", dir, name, b)
				}
				return n
			}
		}
	}
	t.Fatalf("no memory limit in %v", g.Dirs())
	return 0
}
