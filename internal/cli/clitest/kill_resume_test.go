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
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
)

// killResume starts a scripted multi-turn den run, SIGKILLs den after
// delay, then resumes the session with --session. It returns how many
// messages committed before the kill are missing after the resume, and
// an error when the resume failed or left an invalid history.
func killResume(t testing.TB, d *Den, delay time.Duration) (lost int, err error) {
	var turns []llmtest.Turn
	for i := range 8 {
		turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("step %d.", i), Calls: []llmtest.Call{{ID: fmt.Sprintf("toolu_%d", i), Name: "shell_execute",
			Input: fmt.Sprintf(`{"command":"sleep 0.02; echo out-%d"}`, i)}}, InputTokens: 10, OutputTokens: 5})
	}
	turns = append(turns, llmtest.Turn{Text: "finished"})
	fake := llmtest.NewAnthropic(t, turns...)
	cmd := exec.Command(d.Bin, "run", "--json", "--rootfs", "busybox", "do the steps")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["type"] == "session" && !sent {
				ids <- ev["session_id"].(string)
				sent = true
			}
		}
		if !sent {
			close(ids)
		}
	}()
	id, ok := <-ids
	if !ok {
		cmd.Wait()
		return 0, fmt.Errorf("den run printed no session")
	}
	time.Sleep(delay)
	cmd.Process.Kill()
	cmd.Wait()

	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		return 0, err
	}
	before, err := st.Path(context.Background(), id)
	st.Close()
	if err != nil {
		return 0, err
	}
	resume := llmtest.NewAnthropic(t, llmtest.Turn{Text: "Resumed."})
	rc := exec.Command(d.Bin, "run", "--json", "--session", id, "carry on")
	rc.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+resume.URL)
	if b, err := rc.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("resume: %v\n%s", err, b)
	}
	st, err = store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	after, err := st.Path(context.Background(), id)
	if err != nil {
		return 0, err
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
	var msgs []llm.Message
	for _, m := range after {
		msgs = append(msgs, m.Message)
	}
	// What is sent merges same-role neighbours (results committed just
	// before the kill, then the new prompt).
	msgs = llm.Alternate(msgs)
	if err := validHistory(msgs); err != nil {
		return lost, err
	}
	if last := msgs[len(msgs)-1]; last.Role != llm.Assistant || llm.TextOf(last) != "Resumed." {
		return lost, fmt.Errorf("resumed session does not end with the new answer")
	}
	// The request the resumed run sent alternated roles too.
	reqs := resume.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "carry on") {
		return lost, fmt.Errorf("resumed request: %d", len(reqs))
	}
	var body struct {
		Messages []struct{ Role string } `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		return lost, err
	}
	for i := 1; i < len(body.Messages); i++ {
		if body.Messages[i].Role == body.Messages[i-1].Role {
			return lost, fmt.Errorf("resumed request has two %s messages in a row", body.Messages[i].Role)
		}
	}
	return lost, nil
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
		lost, err := killResume(t, d, delay)
		if err != nil || lost > 0 {
			t.Errorf("kill after %v: lost %d committed messages: %v", delay, lost, err)
		}
	}
}

// BenchmarkKillResume50 is the figure: SIGKILL at 50 random
// points; it reports committed messages lost and the share resumed.
func BenchmarkKillResume50(b *testing.B) {
	sandboxtest.Need(b, "bwrap", "bubblewrap")
	sandboxtest.Need(b, "busybox", "busybox-static")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var lostTotal, resumed, runs int
	for b.Loop() {
		for range 50 {
			d := New(b, denBin)
			lost, err := killResume(b, d, time.Duration(r.IntN(600))*time.Millisecond)
			runs++
			lostTotal += lost
			if err == nil {
				resumed++
			} else {
				b.Log(err)
			}
		}
	}
	b.ReportMetric(float64(lostTotal), "messages-lost")
	b.ReportMetric(100*float64(resumed)/float64(runs), "%-resumed")
}
