package ctxwin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"github.com/google/go-cmp/cmp"
)

// copyHistory copies a history deeply enough to detect writes to it.
func copyHistory(h []StoredMsg) []StoredMsg {
	out := make([]StoredMsg, len(h))
	for i, m := range h {
		out[i] = StoredMsg{ID: m.ID, Message: llm.Message{Role: m.Message.Role}}
		for _, p := range m.Message.Parts {
			switch p := p.(type) {
			case *llm.ToolResult:
				r := *p
				r.Content = append([]llm.Part(nil), p.Content...)
				out[i].Message.Parts = append(out[i].Message.Parts, &r)
			default:
				out[i].Message.Parts = append(out[i].Message.Parts, p)
			}
		}
	}
	return out
}

func messagesOf(h []StoredMsg) []llm.Message {
	var out []llm.Message
	for _, m := range h {
		out = append(out, m.Message)
	}
	return out
}

func TestBuildBelowThresholdSendsHistory(t *testing.T) {
	var h hist
	h.user("list the files")
	h.call("", strings.Repeat("x", 10_000))
	h.assistant("done")
	h.user("thanks")
	s := &fakeSaver{}
	w := &Window{Budget: Budget(200_000, 64_000), Saver: s, System: "sys"}
	msgs, use, err := w.Build(context.Background(), h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(messagesOf(h.msgs), msgs); diff != "" {
		t.Errorf("request differs from history (-want +got):\n%s", diff)
	}
	if len(s.saves) != 0 {
		t.Errorf("saved %v below the threshold", s.saves)
	}
	if want := Estimate(msgs, "sys", nil); use.Estimated != want || use.Raw != want || use.Window != 200_000 {
		t.Errorf("use %+v, want estimate %d", use, want)
	}
}

// bigHistory is ten exchanges with 64 KB outputs (16K tokens each):
// 160K tokens, above a 128K window's offload threshold (88K).
func bigHistory() *hist {
	var h hist
	for i := range 10 {
		h.user(fmt.Sprintf("step %d", i))
		h.call(fmt.Sprintf("running step %d", i), fmt.Sprintf("output %d\n", i)+strings.Repeat("abcdefgh", 8192))
		h.assistant(fmt.Sprintf("step %d done", i))
	}
	h.user("what now?")
	return &h
}

func TestOffloadStableAndSavedOnce(t *testing.T) {
	h := bigHistory()
	before := copyHistory(h.msgs)
	s := &fakeSaver{}
	w := &Window{Budget: Budget(128_000, 8_000), Saver: s}
	ctx := context.Background()
	first, use, err := w.Build(ctx, h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if use.Estimated > w.Budget.OffloadTarget {
		t.Errorf("estimate %d above the offload target %d", use.Estimated, w.Budget.OffloadTarget)
	}
	if len(s.saves) == 0 {
		t.Fatal("nothing offloaded")
	}
	// Oldest first: the first output is a stub, in the documented form.
	r := first[2].Parts[0].(*llm.ToolResult)
	stub := llm.TextOf(llm.Message{Parts: r.Content})
	want := fmt.Sprintf("[tool output of %d bytes saved to /den/offloads/shell_execute-m00002-0.txt; read it with file_read if needed]", 9+65536)
	if stub != want {
		t.Errorf("stub\n%s\nwant\n%s", stub, want)
	}
	if r.CallID != "call_1" || r.Name != "shell_execute" {
		t.Errorf("stubbed result lost its call: %+v", r)
	}
	// The history is untouched.
	if diff := cmp.Diff(messagesOf(before), messagesOf(h.msgs)); diff != "" {
		t.Fatalf("Build wrote to the history (-before +after):\n%s", diff)
	}
	// Building again, and again with more history, gives the same
	// prefix, and saves nothing twice.
	for i := range 3 {
		again, _, err := w.Build(ctx, h.msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again[:len(first)]); diff != "" {
			t.Fatalf("build %d: prefix changed (-first +again):\n%s", i, diff)
		}
		h.assistant(fmt.Sprintf("answer %d", i))
		h.user(fmt.Sprintf("question %d", i))
	}
	for name, n := range s.saves {
		if n != 1 {
			t.Errorf("%s saved %d times", name, n)
		}
	}
	// A new Window (a new process) over the same history shows the same
	// stubs: the names come from the messages.
	w2 := &Window{Budget: w.Budget, Saver: &fakeSaver{}}
	fresh, _, err := w2.Build(ctx, h.msgs[:len(before)], nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, fresh); diff != "" {
		t.Errorf("a new window stubs differently (-old +new):\n%s", diff)
	}
}

func TestOffloadKeepsRecentOutputs(t *testing.T) {
	h := bigHistory()
	w := &Window{Budget: Budget(128_000, 8_000), Saver: &fakeSaver{}}
	msgs, _, err := w.Build(context.Background(), h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRequest(msgs); err != nil {
		t.Error(err)
	}
	// The last two exchanges' outputs are within the last two assistant
	// turns' reach and stay; enough older ones are offloaded.
	last := msgs[len(msgs)-3].Parts[0].(*llm.ToolResult)
	if t1 := llm.TextOf(llm.Message{Parts: last.Content}); !strings.HasPrefix(t1, "output 9\n") {
		t.Errorf("latest output offloaded: %.80s", t1)
	}
}

func TestOffloadOversizedLatestOutput(t *testing.T) {
	// One output larger than the window: only offloading it fits.
	var h hist
	h.user("dump the database")
	h.call("", strings.Repeat("row\n", 300_000)) // 1.2 MB, 300K tokens
	w := &Window{Budget: Budget(128_000, 8_000), Saver: &fakeSaver{}}
	msgs, use, err := w.Build(context.Background(), h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if use.Estimated > w.Budget.Limit {
		t.Errorf("estimate %d above the limit %d", use.Estimated, w.Budget.Limit)
	}
	if s := llm.TextOf(llm.Message{Parts: msgs[2].Parts[0].(*llm.ToolResult).Content}); !strings.HasPrefix(s, "[tool output of 1200000 bytes saved to /den/offloads/") {
		t.Errorf("latest output: %.100s", s)
	}
}

func TestOffloadImage(t *testing.T) {
	var h hist
	h.user("take screenshots")
	for i := range 3 {
		h.add(llm.Assistant, &llm.ToolCall{ID: fmt.Sprint("c", i), Name: "read_image", Input: []byte(`{}`)})
		h.add(llm.User, &llm.ToolResult{CallID: fmt.Sprint("c", i), Name: "read_image", Content: []llm.Part{
			&llm.Text{Text: "screen.png"}, &llm.Image{MediaType: "image/png", Data: pngOf(t, 1000, 1000)}}})
	}
	h.user("and?")
	// A window small enough that three images must go.
	w := &Window{Budget: Budget(4_000, 1_000), Saver: &fakeSaver{}, MinOffloadBytes: 100}
	msgs, _, err := w.Build(context.Background(), h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := msgs[2].Parts[0].(*llm.ToolResult)
	if got := r.Content[0].(*llm.Text).Text; got != "screen.png" {
		t.Errorf("small text part changed: %q", got)
	}
	if got := r.Content[1].(*llm.Text).Text; !strings.Contains(got, "/den/offloads/read_image-m00002-0-1.png; view it with read_image") {
		t.Errorf("image stub: %q", got)
	}
}

func TestBuildSaverError(t *testing.T) {
	h := bigHistory()
	boom := errors.New("disk full")
	w := &Window{Budget: Budget(128_000, 8_000), Saver: &fakeSaver{err: boom}}
	if _, _, err := w.Build(context.Background(), h.msgs, nil); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
	// Nothing was remembered: a later Build with a working Saver saves.
	s := &fakeSaver{}
	w.Saver = s
	if _, _, err := w.Build(context.Background(), h.msgs, nil); err != nil || len(s.saves) == 0 {
		t.Errorf("after the error: err %v, %d saves", err, len(s.saves))
	}
}

func TestBuildWithSummary(t *testing.T) {
	var h hist
	h.user("one")    // m00000
	h.assistant("1") // m00001
	h.user("two")    // m00002
	h.call("", "x")  // m00003, m00004
	h.assistant("2") // m00005
	h.user("three")  // m00006
	w := &Window{Budget: Budget(200_000, 0)}
	ctx := context.Background()
	text := func(msgs []llm.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, string(m.Role)+": "+strings.SplitN(llm.TextOf(m), "\n", 2)[0])
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		summaries []Summary
		want      []string
	}{
		{"anchored before a user message: acknowledged", []Summary{{UpToMessageID: "m00001", Text: "S1"}},
			[]string{"user: " + SummaryHeader, "assistant: " + SummaryAck, "user: two", "assistant: ", "user: ", "assistant: 2", "user: three"}},
		{"anchored before an assistant message: no acknowledgement", []Summary{{UpToMessageID: "m00004", Text: "S2"}},
			[]string{"user: " + SummaryHeader, "assistant: 2", "user: three"}},
		{"the latest on the path wins", []Summary{{UpToMessageID: "m00001", Text: "S1"}, {UpToMessageID: "m00004", Text: "S2"}, {UpToMessageID: "other-branch", Text: "S3"}},
			[]string{"user: " + SummaryHeader, "assistant: 2", "user: three"}},
		{"none on the path", []Summary{{UpToMessageID: "other-branch", Text: "S3"}},
			[]string{"user: one", "assistant: 1", "user: two", "assistant: ", "user: ", "assistant: 2", "user: three"}},
	} {
		msgs, _, err := w.Build(ctx, h.msgs, tc.summaries)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, text(msgs)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if err := checkRequest(msgs); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	msgs, _, _ := w.Build(ctx, h.msgs, []Summary{{UpToMessageID: "m00004", Text: "the user counts"}})
	if got, want := llm.TextOf(msgs[0]), SummaryHeader+"\n\nthe user counts\n\n"+SummaryNote; got != want {
		t.Errorf("summary message %q, want %q", got, want)
	}
}
