package clitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestSubagentThroughDenRun: in den run, the model hands a task to a
// sub-agent with den-agent run in its computer and gets its answer in
// the command's output; den sessions list shows the sub-agent's
// session under its parent, with its profile.
func TestSubagentThroughDenRun(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	// One request at a time: the parent waits in den-agent run while
	// its sub-agent asks the model.
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{sh("p1", `den-agent run --profile adder "what is 2+2?" -q`)}},
		llmtest.Turn{Text: "It is 4."},
		llmtest.Turn{Text: "The sub-agent says 4."},
	)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "[profiles.adder]\ndescription = \"adds numbers\"\ninstructions = \"Add carefully.\"\ntools = [\"shell_execute\"]\n")
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--config", cfg, "--rootfs", "busybox", "add for me")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	results := ofType(events, "tool_result")
	if len(results) != 1 || !strings.Contains(results[0]["output"].(string), `"answer": "It is 4."`) {
		t.Fatalf("den-agent run's output: %v", results)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[1].Body), "You are a sub-agent") || !strings.Contains(string(reqs[1].Body), "Add carefully.") {
		t.Fatalf("%d requests; the second is not the sub-agent's", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), "adder: adds numbers") {
		t.Errorf("the parent's prompt does not offer the profile")
	}
	list := d.MustRun("sessions", "list", "--config", cfg)
	lines := strings.Split(strings.TrimSpace(list.Stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "add for me") || !strings.HasPrefix(lines[2], "└ ") || !strings.Contains(lines[2], "what is 2+2? (adder)") {
		t.Errorf("den sessions list:\n%s", list.Stdout)
	}
}

// TestSpawnedSubagentReportsInDenRun: a sub-agent spawned in den run
// answers after its parent's turn ended; den run waits for it, the
// parent gets the answer as a message and answers it, and only then
// does den run end.
func TestSpawnedSubagentReportsInDenRun(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t)
	fake.Respond(func(body []byte) llmtest.Turn {
		b := string(body)
		switch {
		case strings.Contains(b, "You are a sub-agent") && !strings.Contains(b, "tool_result"):
			return llmtest.Turn{Calls: []llmtest.Call{sh("c1", "sleep 1")}}
		case strings.Contains(b, "You are a sub-agent"):
			return llmtest.Turn{Text: "The moon is full."}
		case strings.Contains(b, "The moon is full."):
			return llmtest.Turn{Text: "Reported: the moon is full."}
		case strings.Contains(b, "tool_result"):
			return llmtest.Turn{Text: "A scout is looking; I will tell you."}
		}
		return llmtest.Turn{Calls: []llmtest.Call{sh("p1", `den-agent spawn "look at the moon" -q`)}}
	})
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--rootfs", "busybox", "how is the moon?")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	done := ofType(events, "done")
	if len(done) == 0 || done[len(done)-1]["text"] != "Reported: the moon is full." {
		t.Errorf("den run ended with %v, want the parent's answer to its sub-agent's report", done)
	}
}

// TestSubagentOfKilledServe: den serve killed with SIGKILL while a
// spawned sub-agent runs, its parent waiting for it, is started again:
// the parent is told, once, that its sub-agent was interrupted (and
// how to go on), and runs with that; the sub-agent's status says so.
// A den serve started once more tells it nothing again.
func TestSubagentOfKilledServe(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	arg := uniqueSleep(t, 60)
	killOnCleanup(t, "sleep", arg)
	fake := llmtest.NewAnthropic(t)
	fake.Respond(func(body []byte) llmtest.Turn {
		b := string(body)
		switch {
		case strings.Contains(b, "You are a sub-agent"):
			return llmtest.Turn{Text: "Looking at the moon.", Calls: []llmtest.Call{sh("c1", "sleep "+arg)}}
		case strings.Contains(b, "tool_result"):
			return llmtest.Turn{Text: "A scout is looking; I will tell you."}
		}
		return llmtest.Turn{Calls: []llmtest.Call{sh("p1", `den-agent spawn "look at the moon" -q`)}}
	})
	p := startServe(t, d, fake)
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{}, http.StatusCreated)["id"].(string)
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "how is the moon?"}, http.StatusAccepted)
	var kid string
	waitFor(t, "a sub-agent", func() bool {
		list := p.api(t, "GET", "/api/v1/sessions/"+id+"/subagents", nil, http.StatusOK)["subagents"].([]any)
		if len(list) == 1 {
			kid = list[0].(map[string]any)["id"].(string)
		}
		return kid != ""
	})
	evs, stop := p.stream(t, "/api/v1/sessions/"+kid+"/events", "")
	until(t, evs, "tool_call", "")
	stop()
	waitFor(t, "the parent waits", func() bool {
		return strings.Contains(messagesOf(t, p, id), "I will tell you.")
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	after := llmtest.NewAnthropic(t)
	after.Respond(func(body []byte) llmtest.Turn {
		if strings.Contains(string(body), "was interrupted") && !strings.Contains(string(body), "anything else?") {
			return llmtest.Turn{Text: "The scout was interrupted; I will send another."}
		}
		return llmtest.Turn{Text: "Nothing else."}
	})
	p2 := startServe(t, d, after)
	waitFor(t, "the parent hears of the interruption", func() bool {
		s := p2.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
		return s["status"] == "idle" && strings.Contains(messagesOf(t, p2, id), "I will send another.")
	})
	msgs := messagesOf(t, p2, id)
	if !strings.Contains(msgs, "Sub-agent "+kid+" was interrupted") || !strings.Contains(msgs, "den-agent steer "+kid) {
		t.Errorf("the parent's messages: %s", msgs)
	}
	sa := p2.api(t, "GET", "/api/v1/sessions/"+id+"/subagents/"+kid, nil, http.StatusOK)
	if sa["ended"] != "interrupted" || sa["done"] != true {
		t.Errorf("the sub-agent after the restart: ended %v, done %v", sa["ended"], sa["done"])
	}
	p2.cmd.Process.Signal(syscall.SIGTERM)
	p2.cmd.Wait()

	p3 := startServe(t, d, after)
	p3.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "anything else?"}, http.StatusAccepted)
	waitFor(t, "the parent answers", func() bool {
		s := p3.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
		return s["status"] == "idle" && strings.Contains(messagesOf(t, p3, id), "Nothing else.")
	})
	if n := strings.Count(messagesOf(t, p3, id), "Sub-agent "+kid); n != 1 {
		t.Errorf("the parent was told of its sub-agent %d times, want once: %s", n, messagesOf(t, p3, id))
	}
}

// messagesOf is a session's messages as the API gives them, as JSON.
func messagesOf(t *testing.T, p *daemonProc, id string) string {
	t.Helper()
	raw, _ := json.Marshal(p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)["messages"])
	return string(raw)
}
