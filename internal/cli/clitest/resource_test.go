package clitest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestRunResourceHostPath: den run's answer names a file by its den://
// URL, which the file tool gave the model, and den prints where the
// file is on this machine next to it; --json prints the answer as the
// model wrote it.
func TestRunResourceHostPath(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	answer := "The report is at den://workspace/out/report.md."
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{call("toolu_1", "file_write", `{"path":"out/report.md","content":"# Report\n"}`)}},
		{Text: answer},
	}
	fake := llmtest.NewAnthropic(t, append(turns, turns...)...)
	d := newDen(t)
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	cmd := exec.Command(d.Bin, "run", "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "write the report")
	cmd.Env = append(d.Env(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("den run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, `den://workspace/out/report.md`) {
		t.Errorf("the file tool's result did not give the URL: %s", truncateBytes([]byte(body), 1500))
	}
	sessions := filepath.Join(d.AgentDir("default"), "sessions")
	m := regexp.MustCompile(`^The report is at den://workspace/out/report\.md \((` + regexp.QuoteMeta(sessions) + `/[^/]+/workspace/out/report\.md)\)\.\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("den run printed %q; want the answer with the report's path under %s", out.String(), sessions)
	}
	if got := readFile(t, m[1]); got != "# Report\n" {
		t.Errorf("the printed path %s holds %q", m[1], got)
	}

	events, r := runJSON(t, d, env, "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "write it again")
	if done := ofType(events, "done"); r.Code != 0 || len(done) != 1 || done[0]["text"] != answer {
		t.Errorf("--json: %v (%s)", done, r)
	}
}
