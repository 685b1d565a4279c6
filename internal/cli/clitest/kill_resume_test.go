package clitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
)

// killResume starts a scripted multi-turn den run whose tools each take
// toolTime, SIGKILLs den after delay, then resumes the session with
// --session. It returns how many messages committed before the kill, and
// how many tool calls den had started (their tool_call event was
// printed), are missing after the resume; whether the kill left a call
// running; and an error when the resume failed or left an invalid
// history.
func killResume(t testing.TB, d *Den, toolTime, delay time.Duration) (lost int, midTool bool, err error) {
	var turns []llmtest.Turn
	for i := range 8 {
		turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("step %d.", i), Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", i), Name: "shell_execute",
			Input: fmt.Sprintf(`{"command":"echo start-%d; sleep %.3f; echo out-%d"}`, i, toolTime.Seconds(), i)}}, InputTokens: 10, OutputTokens: 5})
	}
	turns = append(turns, llmtest.Turn{Text: "finished"})
	fake := llmtest.NewAnthropic(t, turns...)
	cmd := exec.Command(d.Bin, "run", "--json", "--rootfs", "busybox", "do the steps")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 0, false, err
	}
	ids := make(chan string, 1)
	var mu sync.Mutex
	var started []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			switch {
			case ev["type"] == "session" && !sent:
				ids <- ev["session_id"].(string)
				sent = true
			case ev["type"] == "tool_call":
				mu.Lock()
				started = append(started, ev["id"].(string))
				mu.Unlock()
			}
		}
		if !sent {
			close(ids)
		}
	}()
	id, ok := <-ids
	if !ok {
		cmd.Wait()
		return 0, false, fmt.Errorf("den run printed no session")
	}
	time.Sleep(delay)
	cmd.Process.Kill()
	cmd.Wait()
	<-read

	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		return 0, false, err
	}
	before, err := st.Path(context.Background(), id)
	if err == nil {
		var open []store.OpenCall
		_, open, err = st.OpenCalls(context.Background(), id)
		midTool = len(open) > 0
	}
	st.Close()
	if err != nil {
		return 0, false, err
	}
	resume := llmtest.NewAnthropic(t, llmtest.Turn{Text: "Resumed."})
	rc := exec.Command(d.Bin, "run", "--json", "--session", id, "carry on")
	rc.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+resume.URL)
	if b, err := rc.CombinedOutput(); err != nil {
		return 0, false, fmt.Errorf("resume: %v\n%s", err, b)
	}
	st, err = store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		return 0, false, err
	}
	defer st.Close()
	after, err := st.Path(context.Background(), id)
	if err != nil {
		return 0, false, err
	}
	have := map[string]bool{}
	for _, m := range after {
		have[m.ID] = true
	}
	for _, m := range before {
		if !have[m.ID] {
			lost++
		}
	}
	// Every call den started is on record, answered.
	answered := map[string]bool{}
	for _, m := range after {
		for _, p := range m.Message.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				answered[r.CallID] = true
			}
		}
	}
	mu.Lock()
	for _, id := range started {
		if !answered[id] {
			lost++
		}
	}
	mu.Unlock()
	var msgs []llm.Message
	for _, m := range after {
		msgs = append(msgs, m.Message)
	}
	// What is sent merges same-role neighbours (results committed just
	// before the kill, then the new prompt).
	msgs = llm.Alternate(msgs)
	if err := validHistory(msgs); err != nil {
		return lost, midTool, err
	}
	if last := msgs[len(msgs)-1]; last.Role != llm.Assistant || llm.TextOf(last) != "Resumed." {
		return lost, midTool, fmt.Errorf("resumed session does not end with the new answer")
	}
	// The request the resumed run sent alternated roles too.
	reqs := resume.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "carry on") {
		return lost, midTool, fmt.Errorf("resumed request: %d", len(reqs))
	}
	var body struct {
		Messages []struct{ Role string } `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		return lost, midTool, err
	}
	for i := 1; i < len(body.Messages); i++ {
		if body.Messages[i].Role == body.Messages[i-1].Role {
			return lost, midTool, fmt.Errorf("resumed request has two %s messages in a row", body.Messages[i].Role)
		}
	}
	return lost, midTool, nil
}

// validHistory checks what every provider needs: roles alternate, the
// first message is the user's, and every tool call has exactly one
// result in the next message (and no result lacks its call).
func validHistory(msgs []llm.Message) error {
	if len(msgs) == 0 || msgs[0].Role != llm.User {
		return fmt.Errorf("history does not start with a user message")
	}
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			return fmt.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		calls := map[string]bool{}
		if i > 0 {
			for _, c := range llm.Calls(msgs[i-1]) {
				calls[c.ID] = true
			}
		}
		got := map[string]int{}
		for _, p := range m.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				if !calls[r.CallID] {
					return fmt.Errorf("message %d: result for unknown call %s", i, r.CallID)
				}
				got[r.CallID]++
			}
		}
		if i > 0 && len(calls) > 0 {
			for id := range calls {
				if got[id] != 1 {
					return fmt.Errorf("message %d: call %s has %d results", i, id, got[id])
				}
			}
		}
	}
	return nil
}

// TestKillAndResume kills den at random points of a multi-turn run and
// resumes each time: nothing committed is lost, and the resumed history
// is valid.
func TestKillAndResume(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for range 8 {
		delay := time.Duration(r.IntN(600)) * time.Millisecond
		d := newDen(t)
		lost, _, err := killResume(t, d, 20*time.Millisecond, delay)
		if err != nil || lost > 0 {
			t.Errorf("kill after %v: lost %d committed messages or started calls: %v", delay, lost, err)
		}
	}
}

// BenchmarkKillResume50 is the figure: SIGKILL at 50 random
// points of a run whose tools take 150 ms each, so that most kills land
// while a tool runs; it reports committed messages and started calls
// lost, and the share resumed.
func BenchmarkKillResume50(b *testing.B) {
	sandboxtest.Need(b, "bwrap", "bubblewrap")
	sandboxtest.Need(b, "busybox", "busybox-static")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var lostTotal, resumed, runs, midTools int
	for b.Loop() {
		for range 50 {
			d := New(b, denBin)
			lost, mid, err := killResume(b, d, 150*time.Millisecond, time.Duration(r.IntN(1800))*time.Millisecond)
			runs++
			if mid {
				midTools++
			}
			lostTotal += lost
			if err == nil {
				resumed++
			} else {
				b.Log(err)
			}
		}
	}
	b.ReportMetric(float64(lostTotal), "messages-or-calls-lost")
	b.ReportMetric(100*float64(resumed)/float64(runs), "%-resumed")
	b.ReportMetric(float64(midTools), "killed-mid-tool")
}

// TestKillWhileToolRuns: den is killed while a shell command runs. The
// command was written ahead, so the resumed run tells the model it was
// interrupted, after how long, and what it had printed; den sessions
// show says so too. (A den that committed calls only with their
// results would resume with no trace of the command.)
func TestKillWhileToolRuns(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	d := newDen(t)
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Installing.", Calls: []llmtest.Call{{ID: "toolu_long", Name: "shell_execute",
			Input: `{"command":"echo unpacking-marker; echo rm -rf /workspace/old; sleep 60; echo never-printed"}`}}, InputTokens: 10, OutputTokens: 5},
		llmtest.Turn{Text: "unused"})
	cmd := exec.Command(d.Bin, "run", "--json", "--rootfs", "busybox", "install the thing")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	id := ""
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev["type"] == "session" {
			id = ev["session_id"].(string)
		}
		if ev["type"] == "tool_call" {
			break
		}
	}
	if id == "" {
		t.Fatal("den run printed no session and no tool call")
	}
	// Wait (bounded) until den has saved the command's first output, as
	// it does once a second, then kill it in the middle of the command.
	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, calls, err := st.OpenCalls(context.Background(), id)
		if err == nil && len(calls) == 1 && strings.Contains(calls[0].Output, "unpacking-marker") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("den did not record the running command's output: %+v %v", calls, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st.Close()
	cmd.Process.Kill()
	cmd.Wait()

	resume := llmtest.NewAnthropic(t, llmtest.Turn{Text: "It was interrupted; checking."})
	rc := exec.Command(d.Bin, "run", "--json", "--session", id, "what happened?")
	rc.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+resume.URL)
	b, err := rc.CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), `"type":"warning"`) {
		t.Errorf("the resumed run did not warn of the interrupted call:\n%s", b)
	}
	reqs := resume.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				ID        string          `json:"id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var call, result bool
	var resultText string
	for _, m := range body.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_use" && c.ID == "toolu_long" {
				call = true
			}
			if c.Type == "tool_result" && c.ToolUseID == "toolu_long" {
				result, resultText = true, string(c.Content)
			}
		}
	}
	if !call || !result {
		t.Fatalf("the resumed request lacks the interrupted call (%v) or its result (%v):\n%s", call, result, reqs[0].Body)
	}
	for _, want := range []string{"interrupted", "unpacking-marker", "rm -rf /workspace/old"} {
		if !strings.Contains(resultText, want) {
			t.Errorf("the model was not told %q: %s", want, resultText)
		}
	}
	if strings.Contains(resultText, "never-printed") {
		t.Errorf("the result claims output the command never printed: %s", resultText)
	}
	show := d.MustRun("sessions", "show", id)
	if !strings.Contains(show.Stdout, "interrupted") || !strings.Contains(show.Stdout, "unpacking-marker") {
		t.Errorf("den sessions show does not show the interrupted call:\n%s", show.Stdout)
	}
}
