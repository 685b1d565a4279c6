package clitest

import (
	"strings"
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
