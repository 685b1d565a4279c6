package clitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

func call(id, name, input string) llmtest.Call {
	return llmtest.Call{ID: id, Name: name, Input: input}
}

func sh(id, command string) llmtest.Call {
	return call(id, "shell_execute", `{"command":`+quoteJSON(command)+`}`)
}

// TestTurnCallsDoNotRace: the calls of one turn that could affect each
// other run in call order in the persistent shell: an install and its
// use, a read and a removal, a mkdir and a cd into it. Read-only calls
// still run side by side (each in a fresh process).
func TestTurnCallsDoNotRace(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	install := `sleep 0.3; printf '#!/bin/sh\necho mytool 1.0\n' > /usr/local/bin/mytool && chmod +x /usr/local/bin/mytool && echo installed`
	var cats []llmtest.Call
	for i := range 10 {
		cats = append(cats, sh(fmt.Sprintf("cat%d", i), "echo pid=$$; cat /etc/hostname"))
	}
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{sh("inst", install), sh("use", "mytool --version")}},
		llmtest.Turn{Calls: []llmtest.Call{sh("mk", "echo data > /workspace/a")}},
		llmtest.Turn{Calls: []llmtest.Call{call("rd", "file_read", `{"path":"/workspace/a"}`), sh("rm", "rm /workspace/a && echo removed")}},
		llmtest.Turn{Calls: []llmtest.Call{sh("md", "mkdir -p /workspace/d"), sh("cd", "cd /workspace/d"), sh("pwd", "pwd")}},
		llmtest.Turn{Calls: cats},
		llmtest.Turn{Text: "done"},
	)
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--rootfs", "busybox", "go")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	out := map[string]string{}
	for _, e := range ofType(events, "tool_result") {
		out[e["id"].(string)] = e["output"].(string)
	}
	if !strings.Contains(out["use"], "mytool 1.0") {
		t.Errorf("the tool ran before its install finished: %q (install: %q)", out["use"], out["inst"])
	}
	if !strings.Contains(out["rd"], "data") {
		t.Errorf("the read raced the removal: %q", out["rd"])
	}
	if !strings.Contains(out["pwd"], "/workspace/d") {
		t.Errorf("the cd did not carry over to the next call: %q (cd: %q)", out["pwd"], out["cd"])
	}
	pids := map[string]bool{}
	for _, c := range cats {
		o := out[c.ID]
		if !strings.Contains(o, "pid=") {
			t.Fatalf("%s: %q", c.ID, o)
		}
		pids[strings.Fields(strings.SplitN(o, "pid=", 2)[1])[0]] = true
	}
	if len(pids) < 10 {
		t.Errorf("the ten cats did not run side by side in fresh processes: %d distinct shells", len(pids))
	}
}

// TestOneWriterPerSession: while one den runs a turn in a session, a
// second den run in that session says so and stops; with --wait it
// waits for the first and then runs.
func TestOneWriterPerSession(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	d := newDen(t)
	first := llmtest.NewAnthropic(t, llmtest.Turn{Text: "warm-up"})
	_, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + first.URL}, "--rootfs", "busybox", "start")
	if r.Code != 0 {
		t.Fatalf("first run: %s", r)
	}
	id := d.MustRun("sessions", "list", "--json").Stdout
	var list []map[string]any
	if err := json.Unmarshal([]byte(id), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %s", err, id)
	}
	sid := list[0]["id"].(string)

	slow := llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{sh("s", "sleep 3; echo slept")}}, llmtest.Turn{Text: "slow done"})
	holder := exec.Command(d.Bin, "run", "--json", "--session", sid, "take your time")
	holder.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+slow.URL)
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"tool_call"`) {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	other := llmtest.NewAnthropic(t, llmtest.Turn{Text: "second"}, llmtest.Turn{Text: "third"})
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + other.URL}
	busy, r := runJSON(t, d, env, "--session", sid, "me too")
	if errs := ofType(busy, "error"); r.Code == 0 || len(errs) != 1 || !strings.Contains(errs[0]["message"].(string), "in use") ||
		!strings.Contains(errs[0]["message"].(string), "--wait") {
		t.Errorf("a second run in a busy session: %s %v", r, busy)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the refused run asked the model %d times", n)
	}
	events, r := runJSON(t, d, env, "--session", sid, "--wait", "after you")
	if r.Code != 0 {
		t.Fatalf("--wait: %s", r)
	}
	if err := holder.Wait(); err != nil {
		t.Errorf("the first run: %v", err)
	}
	// The waiting run saw the first one's whole turn in its history.
	if reqs := other.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "slow done") {
		t.Errorf("the waiting run did not run after the first: %d requests", len(reqs))
	}
	_ = events
}
