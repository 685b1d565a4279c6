package clitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// den computer checkpoint, checkpoints, diff and restore: undo from the
// command line, never touching the user's folder.
func TestComputerUndo(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")
	notes := sandboxtest.UserFolder(t)
	if err := os.WriteFile(filepath.Join(notes, "mine.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.GiveToUser(t, filepath.Join(notes, "mine.txt"))
	if err := os.MkdirAll(filepath.Join(d.ConfigHome, "den"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.WriteConfig("den/config.toml", "[agents.default]\nmounts = [\""+notes+":/mnt/notes\"]\n")
	d.MustRun("exec", "--session", "S", "--", "sh", "-c", "echo one > /root/f && echo w > /workspace/w")

	r := d.MustRun("computer", "checkpoint", "--session", "S")
	if !strings.HasPrefix(r.Stdout, "checkpoint 1 ") {
		t.Fatalf("checkpoint: %v", r)
	}
	d.MustRun("exec", "--session", "S", "--", "sh", "-c", "rm /root/f /workspace/w && echo new > /root/g && rm /mnt/notes/mine.txt")

	var list []struct {
		ID      int    `json:"id"`
		Session string `json:"session"`
		Reason  string `json:"reason"`
	}
	r = d.MustRun("computer", "checkpoints", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list) != 1 || list[0].Session != "S" || list[0].Reason != "manual" {
		t.Fatalf("checkpoints --json: %v %v", list, err)
	}

	r = d.MustRun("computer", "diff", "1")
	for _, want := range []string{"- /root/f (file", "+ /root/g (file", "- /workspace/w (file", "1 added, 2 removed"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("diff does not say %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "/mnt/notes") {
		t.Errorf("diff shows the user's folder:\n%s", r.Stdout)
	}

	r = d.MustRun("computer", "restore", "1")
	for _, want := range []string{"restored to checkpoint 1", "not touched: /mnt/notes (your folder " + notes + ")", "den computer restore --agent default 2"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("restore does not say %q:\n%s", want, r.Stdout)
		}
	}
	if r := d.Run("exec", "--session", "S", "--", "sh", "-c", "cat /root/f /workspace/w; test -e /root/g && echo g; true"); r.Code != 0 || r.Stdout != "one\nw\n" {
		t.Errorf("after the restore: %v", r)
	}
	if _, err := os.Stat(filepath.Join(notes, "mine.txt")); err == nil {
		t.Error("the restore brought back a file in the user's folder: it must not touch it")
	}

	// The restore is undone in turn.
	d.MustRun("computer", "restore", "2")
	if r := d.Run("exec", "--session", "S", "--", "sh", "-c", "cat /root/g; test -e /root/f || echo no-f"); r.Stdout != "new\nno-f\n" {
		t.Errorf("after undoing the restore: %v", r)
	}
	if r := d.Run("computer", "restore", "99"); r.Code == 0 || !strings.Contains(r.Stderr, "no such checkpoint") {
		t.Errorf("restore 99: %v", r)
	}
	if r := d.Run("computer", "diff", "x"); r.Code != 2 {
		t.Errorf("diff x: want exit 2, got %v", r)
	}
	// Reading makes nothing.
	if r := d.MustRun("computer", "checkpoints", "--agent", "nobody"); strings.Count(r.Stdout, "\n") != 1 {
		t.Errorf("checkpoints of an agent without a computer: %v", r)
	}
	if _, err := os.Stat(d.AgentDir("nobody")); err == nil {
		t.Error("listing the checkpoints of an agent without a computer made its folder")
	}
}
