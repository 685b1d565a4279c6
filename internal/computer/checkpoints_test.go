package computer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/checkpoint/checkpointtest"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// state describes a computer's rootfs and a session's workspace.
func state(t *testing.T, c *computer.Computer, session string) []string {
	t.Helper()
	out := checkpointtest.Describe(t, c.Rootfs())
	for _, l := range checkpointtest.Describe(t, filepath.Join(c.SessionDir(session), "workspace")) {
		out = append(out, "workspace/"+l)
	}
	return out
}

func debianComputer(t *testing.T, m *computer.Manager, agent string) *computer.Computer {
	t.Helper()
	sandboxtest.Need(t, "debootstrap", "debootstrap")
	sandboxtest.NeedRoot(t, "debootstrap needs root (mmdebstrap serves ordinary users)")
	m.RootfsOptions.CacheDir = testCacheDir(t)
	c, err := m.Computer(agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Debian}, true); err != nil {
		t.Fatal(err)
	}
	return c
}

// The test: a turn that installs a package and deletes a file
// is undone exactly.
func TestUndoPackageInstallAndDelete(t *testing.T) {
	m := newManager(t)
	c := debianComputer(t, m, "undo")
	deb := checkpointtest.Deb(t, t.TempDir(), "den-hello", "1.0")
	ctx := context.Background()
	notes := t.TempDir()
	mounts := []sandbox.Bind{{Host: notes, Guest: "/mnt/notes"}}
	sandboxtest.GiveToUser(t, notes)

	s, err := c.Start(ctx, "s1", computer.SessionOptions{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "echo keep > /root/notes.txt && echo data > /workspace/data.txt && mkdir -p /workspace/proj && echo x > /workspace/proj/x")
	s.Close()
	b, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(c.SessionDir("s1"), "workspace")
	if err := os.WriteFile(filepath.Join(ws, "hello.deb"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, filepath.Join(ws, "hello.deb"))
	want := state(t, c, "s1")

	cp, err := c.Checkpoint(ctx, computer.CheckpointOptions{Session: "s1", Turn: "turn-1", Reason: "turn", Mounts: mounts, Undo: computer.DefaultUndo()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first checkpoint of a %d-entry Debian computer: %v, %d files read, %d bytes", cp.Entries, cp.Took, cp.Read, cp.Added)

	// The turn.
	s, err = c.Start(ctx, "s1", computer.SessionOptions{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	// The computer plants a symlink where a folder of its workspace was:
	// on the host, /etc is the host's. A restore that followed it would
	// write the host's /etc/x.
	r := run(t, s, "dpkg -i /workspace/hello.deb >/dev/null && den-hello && rm /root/notes.txt /workspace/data.txt && rm -r /workspace/proj && "+
		"ln -s /etc /workspace/proj && echo mine > /mnt/notes/kept.txt")
	if r.ExitCode != 0 || !strings.Contains(r.Output, "hello from den-hello") {
		t.Fatalf("the turn: %+v", r)
	}

	// Not while the computer runs.
	if _, err := c.RestoreCheckpoint(ctx, cp.ID, computer.RestoreOptions{Mounts: mounts, Undo: computer.DefaultUndo()}); !errors.Is(err, computer.ErrInUse) {
		t.Fatalf("restore while a session runs: %v", err)
	}
	s.Close()

	d, err := c.DiffCheckpoint(ctx, cp.ID, 0, mounts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]checkpoint.PackageChange{{Name: "den-hello", Op: "installed", To: "1.0"}}, d.Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	ops := map[string]string{}
	for _, ch := range d.Changes {
		ops[ch.Path] = ch.Op
	}
	for p, op := range map[string]string{"/usr/bin/den-hello": "added", "/root/notes.txt": "removed", "/workspace/data.txt": "removed", "/workspace/proj": "changed", "/var/lib/dpkg/status": "changed"} {
		if ops[p] != op {
			t.Errorf("diff: %s: want %s, got %q", p, op, ops[p])
		}
	}
	for p := range ops {
		if strings.HasPrefix(p, "/mnt/notes/") {
			t.Errorf("the diff shows the user's folder: %s", p)
		}
	}

	res, err := c.RestoreCheckpoint(ctx, cp.ID, computer.RestoreOptions{Mounts: mounts, Undo: computer.DefaultUndo()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, state(t, c, "s1")); diff != "" {
		t.Errorf("after the restore (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat("/etc/x"); err == nil {
		t.Fatal("the restore wrote the host's /etc/x through a symlink the computer planted")
	}
	if b, err := os.ReadFile(filepath.Join(notes, "kept.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("the user's folder was touched: %q %v", b, err)
	}
	if !slices.ContainsFunc(res.Untouched, func(s string) bool { return strings.Contains(s, notes) }) {
		t.Errorf("the restore does not say it left %s alone: %q", notes, res.Untouched)
	}
	s, err = c.Start(ctx, "s1", computer.SessionOptions{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, s, "dpkg -s den-hello >/dev/null 2>&1 && echo installed; command -v den-hello; cat /root/notes.txt /workspace/data.txt")
	s.Close()
	if r.Output != "keep\ndata\n" {
		t.Errorf("in the restored computer: %q", r.Output)
	}

	// The restore is undone in turn.
	if res.Saved.ID == 0 {
		t.Fatal("the state before the restore was not kept")
	}
	if _, err := c.RestoreCheckpoint(ctx, res.Saved.ID, computer.RestoreOptions{Mounts: mounts, Undo: computer.DefaultUndo()}); err != nil {
		t.Fatal(err)
	}
	s, err = c.Start(ctx, "s1", computer.SessionOptions{Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := run(t, s, "den-hello; test -e /root/notes.txt || echo gone"); r.Output != "hello from den-hello\ngone\n" {
		t.Errorf("after undoing the restore: %q", r.Output)
	}
}

// A computer starting while a restore runs waits for it; sessions of
// other agents do not.
func TestStartWaitsForRestore(t *testing.T) {
	m := newManager(t)
	c := busyboxComputer(t, m, "w")
	ctx := context.Background()
	s, err := c.Start(ctx, "a", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "echo one > /root/f")
	s.Close()
	cp, err := c.Checkpoint(ctx, computer.CheckpointOptions{Session: "a", Reason: "manual", Undo: computer.DefaultUndo()})
	if err != nil {
		t.Fatal(err)
	}
	s, err = c.Start(ctx, "a", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, "echo two > /root/f")
	s.Close()
	res, err := c.RestoreCheckpoint(ctx, cp.ID, computer.RestoreOptions{Undo: computer.DefaultUndo()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Undone.Changed != 1 {
		t.Errorf("undone: %+v", res.Undone)
	}
	s, err = c.Start(ctx, "b", computer.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := run(t, s, "cat /root/f"); r.Output != "one\n" {
		t.Errorf("after the restore: %q", r.Output)
	}
	// Reset takes the checkpoints with it.
	s.Close()
	if err := c.Reset(false); err != nil {
		t.Fatal(err)
	}
	if list, err := c.ListCheckpoints(""); err != nil || len(list) != 0 {
		t.Errorf("after a reset: %d checkpoints, %v", len(list), err)
	}
	_ = time.Second
}
