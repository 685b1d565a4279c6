package clitest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/memory"
)

// TestMemoryCommands: what den run's agent saves with memory_write is in
// den memory show and search; den memory edit changes GLOBAL.md through
// the user's editor (even with a link planted where the file is); den
// memory rollup merges the old logs into GLOBAL.md with the model's
// facts and keeps the request as a session with its cost.
func TestMemoryCommands(t *testing.T) {
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "memory_write", Input: `{"content":"The user's bike is a red Brompton."}`}}},
		llmtest.Turn{Text: "Saved.", InputTokens: 6000, OutputTokens: 2},
		llmtest.Turn{Text: "- The user plays the cello (2026-11-01, session s-old)", InputTokens: 500, OutputTokens: 20})
	d := newDen(t)
	serveConfig(t, d, "")
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	run := func(args ...string) Result {
		t.Helper()
		cmd := d.Command(args...)
		cmd.Env = append(cmd.Env, env...)
		return runCmd(t, cmd)
	}
	if r := run("run", "remember my bike"); r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	// den usage --session breaks the session's requests down by part.
	var sessions []struct{ ID string }
	json.Unmarshal([]byte(run("sessions", "list", "--json").Stdout), &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions %v", sessions)
	}
	usage := run("usage", "--session", sessions[0].ID)
	for _, want := range []string{"input by part", "system", "memory", "tools", "history", "total"} {
		if !strings.Contains(usage.Stdout, want) {
			t.Errorf("den usage --session lacks %q: %s", want, usage)
		}
	}
	show := run("memory", "show")
	if show.Code != 0 || !strings.Contains(show.Stdout, memory.LogName(time.Now(), time.Local)) || !strings.Contains(show.Stdout, "red Brompton") {
		t.Fatalf("den memory show: %s", show)
	}
	search := run("memory", "search", "--json", "bike")
	var found struct {
		Entries []struct {
			File, Text string
			Session    string `json:"session_id"`
		}
	}
	if search.Code != 0 || json.Unmarshal([]byte(search.Stdout), &found) != nil || len(found.Entries) != 1 ||
		found.Entries[0].Text != "The user's bike is a red Brompton." || found.Entries[0].Session == "" {
		t.Fatalf("den memory search: %s", search)
	}

	// edit: the editor gets a copy; a link the computer planted as
	// GLOBAL.md is replaced, never followed.
	mem := filepath.Join(d.AgentDir("default"), "memory")
	target := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(target, []byte("host file\n"), 0o644)
	if err := os.Symlink(target, filepath.Join(mem, "GLOBAL.md")); err != nil {
		t.Fatal(err)
	}
	editor := filepath.Join(t.TempDir(), "editor.sh")
	os.WriteFile(editor, []byte("#!/bin/sh\nprintf -- '- The user is Lou.\\n' > \"$1\"\n"), 0o755)
	edit := func() Result {
		cmd := d.Command("memory", "edit")
		cmd.Env = append(cmd.Env, "EDITOR="+editor, "VISUAL=")
		return runCmd(t, cmd)
	}
	if r := edit(); r.Code == 0 {
		t.Errorf("den memory edit read through a planted link: %s", r)
	}
	if b, _ := os.ReadFile(target); string(b) != "host file\n" {
		t.Errorf("the file behind the link changed: %q", b)
	}
	os.Remove(filepath.Join(mem, "GLOBAL.md"))
	if r := edit(); r.Code != 0 {
		t.Fatalf("den memory edit: %s", r)
	}
	if b, err := os.ReadFile(filepath.Join(mem, "GLOBAL.md")); err != nil || string(b) != "- The user is Lou.\n" {
		t.Fatalf("GLOBAL.md after edit: %q %v", b, err)
	}

	// rollup: an old log goes to the model and into GLOBAL.md.
	old := "# 2026-11-01\n\n<!-- den: 2026-11-01T09:00:00Z session=s-old message=m-old -->\nThe user plays the cello.\n"
	os.WriteFile(filepath.Join(mem, "2026-11-01.md"), []byte(old), 0o644)
	roll := run("memory", "rollup")
	if roll.Code != 0 || !strings.Contains(roll.Stdout, "rolled up 1 log(s)") {
		t.Fatalf("den memory rollup: %s", roll)
	}
	last := fake.Requests()[len(fake.Requests())-1].Body
	if !strings.Contains(string(last), "The user plays the cello.") || !strings.Contains(string(last), "- The user is Lou.") {
		t.Errorf("the rollup request: %s", last)
	}
	global, _ := os.ReadFile(filepath.Join(mem, "GLOBAL.md"))
	if !strings.Contains(string(global), "- The user plays the cello (2026-11-01, session s-old)") {
		t.Errorf("GLOBAL.md after rollup:\n%s", global)
	}
	if _, err := os.Stat(filepath.Join(mem, "archive", "2026-11-01.md")); err != nil {
		t.Errorf("the old log is not in archive/: %v", err)
	}
	list := run("sessions", "list")
	if !strings.Contains(list.Stdout, "Memory rollup") {
		t.Errorf("no rollup session: %s", list)
	}
}

// runCmd runs cmd and returns what it did.
func runCmd(t *testing.T, cmd *exec.Cmd) Result {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}
