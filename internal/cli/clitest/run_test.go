package clitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/models"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// runJSON runs `den run --json` with env added, returning the decoded
// event lines and the exit code.
func runJSON(t *testing.T, d *Den, env []string, args ...string) ([]map[string]any, Result) {
	t.Helper()
	cmd := exec.Command(d.Bin, append([]string{"run", "--json"}, args...)...)
	cmd.Env = append(d.Env(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if _, ok := ev["type"].(string); !ok {
			t.Fatalf("event without a type: %q", sc.Text())
		}
		events = append(events, ev)
	}
	return events, Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

func ofType(events []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range events {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestRunAnthropicToolInSandbox drives den run against a fake of the
// Anthropic Messages API: the model asks for a shell command, den runs
// it in the real sandbox, and the next request carries its output.
func TestRunAnthropicToolInSandbox(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Let me check.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute",
			Input: `{"command":"echo made-in-sandbox > /workspace/out.txt; cat /workspace/out.txt; id -u","tool_title":"write a file"}`}},
			InputTokens: 100, OutputTokens: 20},
		llmtest.Turn{Text: "The file says made-in-sandbox.", InputTokens: 150, OutputTokens: 10},
	)
	d := newDen(t)
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	events, r := runJSON(t, d, env, "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "write a file")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	if s := ofType(events, "session"); len(s) != 1 || s[0]["session_id"] == "" || !strings.HasSuffix(s[0]["workspace"].(string), "/workspace") {
		t.Fatalf("session event: %v", s)
	}
	calls := ofType(events, "tool_call")
	if len(calls) != 1 || calls[0]["id"] != "toolu_1" || calls[0]["name"] != "shell_execute" {
		t.Fatalf("tool calls: %v", calls)
	}
	results := ofType(events, "tool_result")
	if len(results) != 1 || !strings.Contains(results[0]["output"].(string), "made-in-sandbox") || results[0]["is_error"] != false {
		t.Fatalf("tool results: %v", results)
	}
	done := ofType(events, "done")
	if len(done) != 1 || done[0]["stop_reason"] != "end_turn" || done[0]["text"] != "The file says made-in-sandbox." {
		t.Fatalf("done: %v", done)
	}
	if u := ofType(events, "usage"); len(u) != 2 || u[0]["input_tokens"].(float64) != 100 || u[0]["cost_usd"].(float64) <= 0 {
		t.Errorf("usage: %v", u)
	}
	var text strings.Builder
	for _, e := range ofType(events, "text") {
		text.WriteString(e["text"].(string))
	}
	if text.String() != "Let me check.The file says made-in-sandbox." {
		t.Errorf("text deltas: %q", text.String())
	}
	// The second request carried the command's output as the result of
	// toolu_1.
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := string(reqs[1].Body)
	if !strings.Contains(body, `"tool_use_id":"toolu_1"`) || !strings.Contains(body, "made-in-sandbox") {
		t.Errorf("second request lacks the tool result: %s", body)
	}
	if !strings.Contains(string(reqs[0].Body), "shell_execute") {
		t.Errorf("first request lacks the tools")
	}
	// The file is in the session's workspace on the host.
	ws := ofType(events, "session")[0]["workspace"].(string)
	if got := readFile(t, ws+"/out.txt"); got != "made-in-sandbox\n" {
		t.Errorf("workspace file: %q", got)
	}

	// Continuing the session sends the whole history again.
	fake2 := llmtest.NewAnthropic(t, llmtest.Turn{Text: "Still here."})
	env2 := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake2.URL}
	events, r = runJSON(t, d, env2, "--continue", "and now?")
	if r.Code != 0 {
		t.Fatalf("continue: %s", r)
	}
	if s := ofType(events, "session"); s[0]["session_id"] != ofType(events, "session")[0]["session_id"] {
		t.Errorf("different session")
	}
	if b := string(fake2.Requests()[0].Body); !strings.Contains(b, "write a file") || !strings.Contains(b, "toolu_1") || !strings.Contains(b, "and now?") {
		t.Errorf("continued request lacks the history: %s", b)
	}
}

func TestRunWithoutKeyExplains(t *testing.T) {
	d := newDen(t)
	cmd := exec.Command(d.Bin, "run", "hello")
	for _, kv := range d.Env() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_API_KEY") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "ANTHROPIC_API_KEY") {
		t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSessionsListShowRm(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "Hello there."})
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--rootfs", "busybox", "say hello")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	id := ofType(events, "session")[0]["session_id"].(string)
	if out := d.MustRun("sessions", "list"); !strings.Contains(out.Stdout, id) || !strings.Contains(out.Stdout, "say hello") {
		t.Errorf("list: %s", out)
	}
	if out := d.MustRun("sessions", "show", id); !strings.Contains(out.Stdout, "Hello there.") || !strings.Contains(out.Stdout, "say hello") {
		t.Errorf("show: %s", out)
	}
	d.MustRun("sessions", "rm", id)
	if out := d.Run("sessions", "show", id); out.Code != 2 {
		t.Errorf("show after rm: %s", out)
	}
}

func TestChatFromPipe(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_9", Name: "shell_execute", Input: `{"command":"echo chat-ran"}`}}},
		llmtest.Turn{Text: "First answer."},
		llmtest.Turn{Text: "Second answer."},
	)
	d := newDen(t)
	cmd := exec.Command(d.Bin, "chat", "--rootfs", "busybox")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	cmd.Stdin = strings.NewReader("run something\n/help\n/model\nagain\n/exit\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	s := string(out)
	def, err := (&models.Resolver{Config: &config.Config{}, Env: func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "sk-test"
		}
		return ""
	}}).Default()
	if err != nil {
		t.Fatal(err)
	}
	// With only an Anthropic key, the chat uses den's default model.
	for _, want := range []string{"⚙ shell_execute echo chat-ran", "✓ chat-ran", "First answer.", "/new", def, "Second answer."} {
		if !strings.Contains(s, want) {
			t.Errorf("chat output lacks %q:\n%s", want, s)
		}
	}
	// Both prompts went to one session: the third request has all of it.
	reqs := fake.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), "run something") || !strings.Contains(string(reqs[2].Body), "First answer.") {
		t.Errorf("requests: %d", len(reqs))
	}
}

// TestRunEveryAPI runs the same tool-using conversation through each
// provider API's fake: the command runs in the sandbox and its output
// reaches the next request in that API's own shape.
func TestRunEveryAPI(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	turns := func(id string) []llmtest.Turn {
		return []llmtest.Turn{
			{Calls: []llmtest.Call{{ID: id, Name: "shell_execute", Input: `{"command":"echo api-$((6*7))"}`}}, InputTokens: 10, OutputTokens: 5},
			{Text: "It printed api-42.", InputTokens: 20, OutputTokens: 5},
		}
	}
	for _, c := range []struct {
		name, model string
		fake        func(testing.TB, ...llmtest.Turn) *llmtest.Server
		env         func(url string) []string
		callID      string
	}{
		{"openai", "openai/gpt-5", llmtest.NewOpenAI, func(u string) []string { return []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + u + "/v1"} }, "call_1"},
		{"openai-responses", "openai-responses/gpt-5", llmtest.NewResponses, func(u string) []string { return []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + u + "/v1"} }, "call_1"},
		{"gemini", "gemini/gemini-2.5-pro", llmtest.NewGemini, func(u string) []string { return []string{"GEMINI_API_KEY=test", "GEMINI_BASE_URL=" + u} }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := c.fake(t, turns(c.callID)...)
			d := newDen(t)
			events, r := runJSON(t, d, c.env(fake.URL), "--rootfs", "busybox", "--model", c.model, "compute")
			if r.Code != 0 {
				t.Fatalf("den run: %s", r)
			}
			res := ofType(events, "tool_result")
			if len(res) != 1 || !strings.Contains(res[0]["output"].(string), "api-42") {
				t.Fatalf("tool result: %v\n%s", res, r)
			}
			if done := ofType(events, "done"); len(done) != 1 || done[0]["text"] != "It printed api-42." {
				t.Errorf("done: %v", done)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "api-42") {
				t.Errorf("second request lacks the result (%d requests)", len(reqs))
			}
		})
	}
}

func TestBudgetAndUsage(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	var turns []llmtest.Turn
	for i := range 20 {
		turns = append(turns, llmtest.Turn{Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", i), Name: "shell_execute", Input: `{"command":"true"}`}},
			InputTokens: 100_000, OutputTokens: 1000})
	}
	fake := llmtest.NewAnthropic(t, turns...)
	d := newDen(t)
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	// claude-sonnet-4-5 at $3/M input, $15/M output: $0.315 a turn.
	events, r := runJSON(t, d, env, "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "--budget", "$1", "spend")
	if r.Code != 1 {
		t.Fatalf("budget run: %s", r)
	}
	done := ofType(events, "done")
	if len(done) != 1 || done[0]["stop_reason"] != "budget" || len(ofType(events, "error")) != 1 {
		t.Errorf("done: %v", done)
	}
	var spent float64
	for _, u := range ofType(events, "usage") {
		spent += u["cost_usd"].(float64)
	}
	if spent > 1 || spent < 0.5 || len(fake.Requests()) != 3 {
		t.Errorf("spent $%.3f in %d requests; want under $1 after 3", spent, len(fake.Requests()))
	}
	id := ofType(events, "session")[0]["session_id"].(string)
	out := d.MustRun("usage", "--session", id, "--json")
	var u map[string]float64
	if err := json.Unmarshal([]byte(out.Stdout), &u); err != nil || u["requests"] != 3 || u["input_tokens"] != 300_000 || fmt.Sprintf("%.3f", u["cost_usd"]) != fmt.Sprintf("%.3f", spent) {
		t.Errorf("usage: %v %v", u, err)
	}
	if out := d.MustRun("usage"); !strings.Contains(out.Stdout, "requests      3") {
		t.Errorf("agent usage: %s", out.Stdout)
	}
}

func TestRunRetriesAndFallsOver(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	broken := llmtest.NewAnthropic(t, llmtest.Turn{Error: &llmtest.HTTPError{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}})
	flaky := llmtest.NewOpenAI(t,
		llmtest.Turn{Error: &llmtest.HTTPError{Status: 500, Body: `{"error":{"message":"boom","type":"server_error"}}`}},
		llmtest.Turn{Text: "Recovered."})
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "[retry]\ndelays = [\"10ms\", \"10ms\"]\n")
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + broken.URL, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + flaky.URL + "/v1"}
	events, r := runJSON(t, d, env, "--config", cfg, "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5,openai/gpt-5", "hi")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	retries := ofType(events, "retry")
	if len(retries) != 2 || !strings.Contains(retries[0]["reason"].(string), "auth") || retries[0]["model"] != "openai/gpt-5" ||
		!strings.Contains(retries[1]["reason"].(string), "server") || retries[1]["delay_ms"].(float64) != 10 {
		t.Errorf("retries: %v", retries)
	}
	if m := ofType(events, "model"); len(m) == 0 || m[len(m)-1]["model"] != "openai/gpt-5" {
		t.Errorf("model events: %v", m)
	}
	if done := ofType(events, "done"); done[0]["text"] != "Recovered." {
		t.Errorf("done: %v", done)
	}
}

// TestRunSurvivesBadCalls: a looping model is stopped by the loop
// guard, malformed arguments are repaired when that is safe, and a cut
// file_write never runs.
func TestRunSurvivesBadCalls(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{ID: "toolu_a", Name: "bash", Input: `{"command":"echo repaired-$((1+1))"`}}},
		{Calls: []llmtest.Call{{ID: "toolu_b", Name: "file_write", Input: `{"path":"/workspace/cut.txt","content":"half a fi`}}},
	}
	for i := range 32 {
		turns = append(turns, llmtest.Turn{Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_loop%d", i), Name: "shell_execute", Input: `{"command":"cat /etc/hostname"}`}}})
	}
	turns = append(turns, llmtest.Turn{Text: "I will stop."})
	fake := llmtest.NewAnthropic(t, turns...)
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--rootfs", "busybox", "misbehave")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	results := ofType(events, "tool_result")
	if out := results[0]["output"].(string); !strings.Contains(out, "repaired-2") {
		t.Errorf("repaired call: %q", out)
	}
	if out := results[1]["output"].(string); results[1]["is_error"] != true || !strings.Contains(out, "smaller") {
		t.Errorf("cut file_write: %v %q", results[1]["is_error"], out)
	}
	ws := ofType(events, "session")[0]["workspace"].(string)
	if _, err := os.Stat(ws + "/cut.txt"); err == nil {
		t.Error("a cut file_write wrote a file")
	}
	blocked := 0
	for _, res := range results[2:] {
		if strings.HasPrefix(res["output"].(string), "[LOOP BLOCKED]") {
			blocked++
		}
	}
	if blocked == 0 {
		t.Errorf("the loop was never blocked in %d calls", len(results)-2)
	}
	if len(ofType(events, "tool_call")) != len(results) {
		t.Errorf("%d calls, %d results", len(ofType(events, "tool_call")), len(results))
	}
}

// TestUnknownModel: a model den does not know is used with a warning
// that says what den assumed and how to tell it more; a dollar budget,
// which needs prices, is refused at start.
func TestUnknownModel(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "Hi.", InputTokens: 10, OutputTokens: 2})
	d := newDen(t)
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	events, r := runJSON(t, d, env, "--rootfs", "busybox", "--model", "anthropic/claude-mystery-9", "hi")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	w := ofType(events, "warning")
	if len(w) != 1 || !strings.Contains(w[0]["message"].(string), "does not know the model") || !strings.Contains(w[0]["message"].(string), "price_input") {
		t.Errorf("warnings: %v", w)
	}
	_, r = runJSON(t, d, env, "--model", "anthropic/claude-mystery-9", "--budget", "$1", "hi")
	if r.Code != 2 || !strings.Contains(r.Stderr, "needs prices") {
		t.Errorf("a dollar budget with unknown prices: %s", r)
	}
	if _, r = runJSON(t, d, env, "--model", "anthropic/claude-mystery-9", "--budget", "200k tokens", "hi"); r.Code != 0 {
		t.Errorf("a token budget with unknown prices: %s", r)
	}
}
