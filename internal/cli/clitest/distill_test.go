package clitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"den.dev/den/internal/llm/llmtest"
)

// TestSkillsDistill: a session that went well becomes a skill draft:
// the model gets the session's commands and what they printed, the
// draft is printed and kept for review (not installed without a yes)
// and listed by den skills drafts,
// installed with --yes, and an answer that is not a skill (a path out
// of the folder) is refused with nothing written.
func TestSkillsDistill(t *testing.T) {
	d := newDen(t)
	provision(t, d, "default")
	draft := "Here it is.\n<file path=\"SKILL.md\">\n---\nname: disk-report\ndescription: Report the largest folders. Use when the user asks what fills the disk.\n---\n# Disk report\nRun /den/skills/disk-report/scripts/report.sh FOLDER.\n</file>\n" +
		"<file path=\"scripts/report.sh\">\n#!/bin/sh\ndu -s \"${1:-.}\"/* | sort -n | tail -5\n</file>\n"
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"du -s /etc/* | sort -n | tail -3 && echo found-the-big-ones"}`}}},
		llmtest.Turn{Text: "The biggest folders are listed."},
		llmtest.Turn{Text: draft},
		llmtest.Turn{Text: draft},
		llmtest.Turn{Text: "<file path=\"SKILL.md\">\n---\nname: evil\ndescription: x\n---\n</file>\n<file path=\"../../escape.sh\">\necho hi\n</file>"})
	events, r := runJSON(t, d, mcpEnv(fake), "what fills my disk?")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	id, _ := events[0]["session_id"].(string)
	if id == "" {
		t.Fatalf("no session id: %v", events[0])
	}
	run := func(args ...string) Result {
		cmd := d.Command(args...)
		cmd.Env = append(cmd.Env, mcpEnv(fake)...)
		out, err := cmd.CombinedOutput()
		res := Result{Stdout: string(out)}
		if cmd.ProcessState != nil {
			res.Code = cmd.ProcessState.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return res
	}
	out := run("skills", "distill", id)
	dir := filepath.Join(d.AgentDir("default"), "skill-drafts", "disk-report")
	if out.Code != 0 || !strings.Contains(out.Stdout, "──── SKILL.md") || !strings.Contains(out.Stdout, "du -s \"${1:-.}\"/*") ||
		!strings.Contains(out.Stdout, "not installed: read it, then den skills install "+dir) {
		t.Fatalf("den skills distill without a terminal: %s", out)
	}
	if body := string(fake.Requests()[2].Body); !strings.Contains(body, "found-the-big-ones") || !strings.Contains(body, "du -s /etc/*") {
		t.Errorf("the model did not get the session's command and output: %.2000s", body)
	}
	if fi, err := os.Stat(filepath.Join(dir, "scripts", "report.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("the draft's script: %v %v", fi, err)
	}
	if list := run("skills", "list"); strings.Contains(list.Stdout, "disk-report") {
		t.Errorf("installed without a yes:\n%s", list)
	}
	// It waits among the drafts, with where it is.
	if drafts := run("skills", "drafts"); drafts.Code != 0 || !strings.Contains(drafts.Stdout, "NAME") ||
		!regexp.MustCompile(`(?m)^disk-report +default +\d{4}-\d\d-\d\d \d\d:\d\d +0 +`+regexp.QuoteMeta(dir)+`$`).MatchString(drafts.Stdout) {
		t.Errorf("den skills drafts: %s", drafts)
	}
	var waiting []struct {
		Agent, Name, Folder string
		Findings, High      int
	}
	if drafts := run("skills", "drafts", "--agent", "default", "--json"); json.Unmarshal([]byte(drafts.Stdout), &waiting) != nil ||
		len(waiting) != 1 || waiting[0].Name != "disk-report" || waiting[0].Agent != "default" || waiting[0].Folder != dir {
		t.Errorf("den skills drafts --json: %s", drafts)
	}
	if drafts := run("skills", "drafts", "--agent", "other"); drafts.Code != 0 || !strings.Contains(drafts.Stdout, "no skill drafts waiting") {
		t.Errorf("another agent's drafts: %s", drafts)
	}
	if out := run("skills", "distill", id, "--yes"); out.Code != 0 || !strings.Contains(out.Stdout, "installed disk-report for agent default") {
		t.Fatalf("den skills distill --yes: %s", out)
	}
	if list := run("skills", "list"); !strings.Contains(list.Stdout, "disk-report") {
		t.Errorf("not installed:\n%s", list)
	}
	out = run("skills", "distill", id)
	if out.Code == 0 || !strings.Contains(out.Stdout, "not inside the skill's folder") {
		t.Errorf("a draft writing outside its folder: %s", out)
	}
	if _, err := os.Stat(filepath.Join(d.AgentDir("default"), "skill-drafts", "evil")); err == nil {
		t.Error("the refused draft was written")
	}
}
