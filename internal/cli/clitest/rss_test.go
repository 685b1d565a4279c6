package clitest

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// BenchmarkRun200TurnsPeakRSS runs den run through a 200-turn session
// (each turn a shell command in the sandbox, each answer 2 KB of text)
// against a fake Anthropic API, and reports den's peak resident memory.
func BenchmarkRun200TurnsPeakRSS(b *testing.B) {
	sandboxtest.Need(b, "bwrap", "bubblewrap")
	sandboxtest.Need(b, "busybox", "busybox-static")
	var turns []llmtest.Turn
	pad := fmt.Sprintf("%02000d", 0)
	for i := range 199 {
		turns = append(turns, llmtest.Turn{Text: pad, Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", i), Name: "shell_execute",
			Input: fmt.Sprintf(`{"command":"echo turn %d; seq 1 50"}`, i)}}, InputTokens: 1000, OutputTokens: 100})
	}
	turns = append(turns, llmtest.Turn{Text: "done"})
	var peakMB float64
	for b.Loop() {
		fake := llmtest.NewAnthropic(b, turns...)
		d := New(b, denBin)
		cmd := exec.Command(d.Bin, "run", "--rootfs", "busybox", "--max-turns", "200", "go")
		cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("den run: %v\n%s", err, out)
		}
		if n := len(fake.Requests()); n != 200 {
			b.Fatalf("%d requests, want 200", n)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		peakMB = max(peakMB, float64(ru.Maxrss)/1024)
	}
	b.ReportMetric(peakMB, "MB-peak-RSS")
}
