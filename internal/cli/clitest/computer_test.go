package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// rootfsLeftovers lists what a failed provisioning left in the agent's
// folder: the rootfs, its temporary folder or its info file.
func rootfsLeftovers(t *testing.T, agentDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(agentDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "rootfs") || strings.HasPrefix(e.Name(), ".rootfs") || e.Name() == "computer.json" {
			left = append(left, e.Name())
		}
	}
	return left
}

func TestBadInputLeavesNoState(t *testing.T) {
	t.Parallel()
	corrupt := filepath.Join(t.TempDir(), "x.tar.gz")
	// Fixed bytes that are neither gzip nor tar.
	junk := make([]byte, 8192)
	for i := range junk {
		junk[i] = byte(i*131 + i/7)
	}
	if err := os.WriteFile(corrupt, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, rootfs string
		code         int // 0: any failure
		want         []string
	}{
		{"unknown source", "nosuch:thing", 2,
			[]string{"nosuch:thing", "alpine", "debian", "ubuntu", "tar:", "dir:", "busybox"}},
		{"missing tarball", "tar:/nonexistent.tar", 0, []string{"/nonexistent.tar"}},
		{"corrupt tarball", "tar:" + corrupt, 0, []string{corrupt}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDen(t)
			r := d.Run("exec", "--agent", "a", "--rootfs", c.rootfs, "--", "true")
			if r.Code == 0 || (c.code != 0 && r.Code != c.code) {
				t.Errorf("--rootfs %s: want failure (exit %d), got %v", c.rootfs, c.code, r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("--rootfs %s: stderr does not mention %q:\n%s", c.rootfs, w, r.Stderr)
				}
			}
			if left := rootfsLeftovers(t, d.AgentDir("a")); len(left) > 0 {
				t.Errorf("--rootfs %s: left %v in %s", c.rootfs, left, d.AgentDir("a"))
			}
			// Nothing half-made stands in the way of a good source.
			provision(t, d, "a")
		})
	}

	t.Run("bad agent name", func(t *testing.T) {
		t.Parallel()
		d := newDen(t)
		for _, agent := range []string{"../x", "", ".hidden", "a/b", strings.Repeat("a", 65)} {
			r := d.Run("exec", "--agent", agent, "--rootfs", "busybox", "--", "true")
			if r.Code != 2 || !strings.Contains(r.Stderr, "agent") {
				t.Errorf("--agent %q: want exit 2 and a message about the agent name, got %v", agent, r)
			}
		}
		ents, _ := os.ReadDir(filepath.Join(d.Home, "agents"))
		if len(ents) > 0 {
			t.Errorf("bad agent names created %v under agents/", ents)
		}
		for _, p := range []string{filepath.Join(d.Home, "x"), filepath.Join(filepath.Dir(d.Home), "x")} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("--agent ../x created %s", p)
			}
		}
	})
}

func TestComputerPersists(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	d.MustRun("exec", "--", "sh", "-c", "echo kept > /root/note")
	if r := d.Run("exec", "--", "cat", "/root/note"); r.Code != 0 || r.Stdout != "kept\n" {
		t.Errorf("/root/note in the next exec: want \"kept\\n\", got %v", r)
	}

	d.MustRun("exec", "--session", "A", "--", "sh", "-c", "echo a > /workspace/a-only")
	if r := d.Run("exec", "--session", "A", "--", "cat", "/workspace/a-only"); r.Code != 0 || r.Stdout != "a\n" {
		t.Errorf("session A's /workspace in its next exec: got %v", r)
	}
	if r := d.Run("exec", "--session", "B", "--", "ls", "-A", "/workspace"); r.Code != 0 || r.Stdout != "" {
		t.Errorf("session B's /workspace: want empty, got %v", r)
	}
	sessions := filepath.Join(d.AgentDir("default"), "sessions")
	for _, s := range []string{"A", "B"} {
		if fi, err := os.Stat(filepath.Join(sessions, s)); err != nil || !fi.IsDir() {
			t.Errorf("session %s: no folder under %s: %v", s, sessions, err)
		}
	}
	if _, err := os.Stat(filepath.Join(sessions, "A", "workspace", "a-only")); err != nil {
		t.Errorf("session A's file is not in its host folder: %v", err)
	}
	if r := d.Run("exec", "--session", "../B", "--", "true"); r.Code != 2 {
		t.Errorf("--session ../B: want exit 2, got %v", r)
	}
}

// listed returns the fields of the agent's line of `den computer list`.
func listed(t *testing.T, d *Den, agent string) []string {
	t.Helper()
	r := d.MustRun("computer", "list")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "AGENT") {
		t.Fatalf("computer list: no header:\n%s", r.Stdout)
	}
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) > 0 && f[0] == agent {
			return f
		}
	}
	return nil
}

func TestComputerListExportResetImport(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	tar := sandboxtest.Need(t, "tar", "tar")
	provision(t, d, "x")
	d.MustRun("exec", "--agent", "x", "--", "sh", "-c", "echo exported > /root/marker")

	// AGENT SYSTEM(distro version) SOURCE SIZE(n unit) SESSIONS CREATED(date time)
	if f := listed(t, d, "x"); len(f) < 3 || f[1] != "busybox" || !slices.Contains(f[2:], "busybox") {
		t.Errorf("computer list: want agent x, distro busybox, source busybox; got %q", f)
	}

	file := filepath.Join(t.TempDir(), "x.tar")
	d.MustRun("computer", "export", "--agent", "x", "-o", file)
	r := runTool(t, tar, "-tf", file)
	if !slices.Contains(strings.Split(r, "\n"), "./bin/busybox") {
		t.Errorf("tar -tf of the export does not list ./bin/busybox:\n%s", r)
	}

	d.MustRun("computer", "reset", "--agent", "x")
	if _, err := os.Stat(filepath.Join(d.AgentDir("x"), "rootfs")); !os.IsNotExist(err) {
		t.Errorf("rootfs still there after reset: %v", err)
	}
	if f := listed(t, d, "x"); f != nil {
		t.Errorf("computer list shows x after reset: %q", f)
	}

	d.MustRun("computer", "import", file, "--agent", "y")
	if r := d.Run("exec", "--agent", "y", "--", "cat", "/root/marker"); r.Code != 0 || r.Stdout != "exported\n" {
		t.Errorf("marker in the imported computer: want \"exported\\n\", got %v", r)
	}
	if f := listed(t, d, "y"); len(f) < 3 || f[1] != "busybox" || !slices.Contains(f, "tar:"+file) {
		t.Errorf("computer list: want y, busybox, from tar:%s; got %q", file, f)
	}
	if r := d.Run("computer", "import", file, "--agent", "y"); r.Code == 0 {
		t.Errorf("import over an existing computer: want failure, got %v", r)
	}
}

func TestComputerResetKeepHome(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "k")
	d.MustRun("exec", "--agent", "k", "--", "sh", "-c", "echo kept > /root/keep; touch /etc/dropped")

	d.MustRun("computer", "reset", "--agent", "k", "--keep-home")
	if _, err := os.Stat(filepath.Join(d.AgentDir("k"), "rootfs")); !os.IsNotExist(err) {
		t.Errorf("rootfs still there after reset: %v", err)
	}
	r := d.Run("exec", "--agent", "k", "--rootfs", "busybox", "--", "sh", "-c", "cat /root/keep; test ! -e /etc/dropped")
	if r.Code != 0 || r.Stdout != "kept\n" {
		t.Errorf("after reset --keep-home: want /root/keep kept and /etc/dropped gone, got %v", r)
	}
}

// runTool runs a host tool and returns its standard output.
func runTool(t *testing.T, tool string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", tool, strings.Join(args, " "), err)
	}
	return string(out)
}
