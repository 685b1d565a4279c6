package ctxwin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
)

// fakeSummarizer answers with the "turn-N" markers of its input, and
// fails when the input is longer than max (0: never).
type fakeSummarizer struct {
	max    int
	err    error // the failure (default: a 400 "prompt is too long")
	inputs []string
}

func (f *fakeSummarizer) summarize(ctx context.Context, msgs []llm.Message) (string, llm.Usage, error) {
	in := textOf(msgs)
	f.inputs = append(f.inputs, in)
	u := llm.Usage{InputTokens: int64(len(in) / 4), OutputTokens: 50}
	if f.max > 0 && len(in) > f.max {
		err := f.err
		if err == nil {
			err = &llm.APIError{API: "fake", Status: 400, Type: "invalid_request_error", Message: "prompt is too long"}
		}
		return "", u, err
	}
	// Keep the earlier summary's markers and the transcript's.
	return "Summary: " + strings.Join(markers(in), " "), u, nil
}

// randomHistory builds a valid history of user turns, each a prompt
// followed by rounds of tool calls (several per message at times) and
// usually an answer; a turn left without an answer has its calls
// answered in the next prompt's message, as agent.repair does.
func randomHistory(r *rand.Rand, turns, maxOutput int) []StoredMsg {
	var h hist
	var pending []string // calls of an interrupted turn
	for t := range turns {
		prompt := []llm.Part{}
		for _, id := range pending {
			prompt = append(prompt, &llm.ToolResult{CallID: id, Name: "shell_execute", IsError: true,
				Content: []llm.Part{&llm.Text{Text: "no result: den stopped before this call finished"}}})
		}
		pending = nil
		prompt = append(prompt, &llm.Text{Text: fmt.Sprintf("turn-%d: please do the next thing %s", t, strings.Repeat("p", r.IntN(200)))})
		h.add(llm.User, prompt...)
		rounds := r.IntN(4)
		for k := range rounds {
			n := 1 + r.IntN(3)
			outputs := make([]string, n)
			for i := range outputs {
				outputs[i] = fmt.Sprintf("turn-%d out %d.%d ", t, k, i) + strings.Repeat("o", r.IntN(maxOutput))
			}
			if t == turns-1 || r.IntN(8) > 0 || k < rounds-1 {
				h.call(fmt.Sprintf("working on turn-%d", t), outputs...)
				continue
			}
			// Interrupted: calls without results.
			var calls []llm.Part
			for range n {
				h.calls++
				id := fmt.Sprintf("call_%d", h.calls)
				calls = append(calls, &llm.ToolCall{ID: id, Name: "shell_execute", Input: []byte(`{}`)})
				pending = append(pending, id)
			}
			h.add(llm.Assistant, calls...)
		}
		if len(pending) == 0 && (t < turns-1 || r.IntN(2) == 0) {
			h.assistant(fmt.Sprintf("turn-%d done %s", t, strings.Repeat("a", r.IntN(300))))
		}
		if len(pending) == 0 && t < turns-1 && h.msgs[len(h.msgs)-1].Message.Role == llm.User {
			h.assistant("ok")
		}
	}
	return h.msgs
}

// straddles reports a call before cut answered at or after it.
func straddles(h []StoredMsg, cut int) string {
	calls := map[string]bool{}
	for _, m := range h[:cut] {
		for _, c := range llm.Calls(m.Message) {
			calls[c.ID] = true
		}
	}
	for _, m := range h[cut:] {
		for _, p := range m.Message.Parts {
			if r, ok := p.(*llm.ToolResult); ok && calls[r.CallID] {
				return r.CallID
			}
		}
	}
	return ""
}

func indexOf(h []StoredMsg, id string) int {
	for i, m := range h {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// TestCompactProperties checks, over random histories, that compaction
// never separates a call from its result, keeps the last three user
// turns when they fit, and leads to a valid request that fits.
func TestCompactProperties(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		turns := 1 + r.IntN(12)
		roomy := seed%2 == 0
		maxOutput, window := 20_000, 16_000
		if roomy {
			maxOutput, window = 3_000, 200_000
		}
		h := randomHistory(r, turns, maxOutput)
		if err := checkRequest(messagesOf(h)); err != nil {
			t.Fatalf("seed %d: generated an invalid history: %v", seed, err)
		}
		f := &fakeSummarizer{}
		w := &Window{Budget: Budget(window, 4_000), Saver: &fakeSaver{}, Summarize: f.summarize, System: "sys"}
		var summaries []Summary
		for round := range 2 {
			c, err := w.Compact(ctx, h, summaries)
			if errors.Is(err, ErrNothingToCompact) {
				break
			}
			if err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			cut := indexOf(h, c.Summary.UpToMessageID) + 1
			if cut <= 0 || cut >= len(h) {
				t.Fatalf("seed %d: anchor %q at %d of %d", seed, c.Summary.UpToMessageID, cut-1, len(h))
			}
			if id := straddles(h, cut); id != "" {
				t.Fatalf("seed %d: the cut at %d separates call %s from its result", seed, cut, id)
			}
			// The last three user turns are kept when they fit, which
			// they always do in the roomy window.
			var users []int
			for i, m := range h {
				if isUserTurn(m.Message) {
					users = append(users, i)
				}
			}
			start := 0
			if len(summaries) > 0 {
				start = indexOf(h, summaries[len(summaries)-1].UpToMessageID) + 1
			}
			if roomy && len(users) >= KeepUserTurns {
				// The latest place at or before the third last user turn
				// where a cut separates nothing.
				third := users[len(users)-KeepUserTurns]
				c3 := third
				for c3 > start && straddles(h, c3) != "" {
					c3--
				}
				if c3 > start && cut != c3 {
					t.Fatalf("seed %d: cut at %d, want %d (the user turn at %d)", seed, cut, c3, third)
				}
			}
			// The summary covers every turn it replaced.
			for _, m := range markers(textOf(messagesOf(h[:cut]))) {
				if !strings.Contains(c.Summary.Text, m+" ") && !strings.HasSuffix(c.Summary.Text, m) {
					t.Fatalf("seed %d: summary %q lacks %s", seed, c.Summary.Text, m)
				}
			}
			summaries = append(summaries, c.Summary)
			msgs, use, err := w.Build(ctx, h, summaries)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkRequest(msgs); err != nil {
				t.Fatalf("seed %d: request after compaction: %v", seed, err)
			}
			if use.Estimated > w.Budget.Limit {
				t.Fatalf("seed %d: %d tokens after compaction, limit %d", seed, use.Estimated, w.Budget.Limit)
			}
		}
	}
}

// longHistory is n user turns of about 1 KB each, with a tool call.
func longHistory(n int) []StoredMsg {
	var h hist
	for t := range n {
		h.user(fmt.Sprintf("turn-%d: %s", t, strings.Repeat("u", 600)))
		h.call("", fmt.Sprintf("turn-%d output %s", t, strings.Repeat("o", 300)))
		h.assistant(fmt.Sprintf("turn-%d done", t))
	}
	return h.msgs
}

func TestCompactSplitsWhenTheSummaryFails(t *testing.T) {
	h := longHistory(40)
	f := &fakeSummarizer{max: 9_000}
	w := &Window{Budget: Budget(200_000, 64_000), Summarize: f.summarize}
	c, err := w.Compact(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Calls < 3 || c.Calls != len(f.inputs) {
		t.Errorf("%d calls (%d seen)", c.Calls, len(f.inputs))
	}
	if c.Usage.OutputTokens != int64(50*c.Calls) {
		t.Errorf("usage %+v not summed over %d calls", c.Usage, c.Calls)
	}
	// Turns 0–36 summarized (the last three kept), every one of them in
	// the merged summary.
	if c.Summary.UpToMessageID != h[37*4-1].ID || c.Compacted != 37*4 {
		t.Errorf("anchor %s, %d compacted", c.Summary.UpToMessageID, c.Compacted)
	}
	var want []string
	for i := range 37 {
		want = append(want, fmt.Sprintf("turn-%d", i))
	}
	if got := markers(c.Summary.Text); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("summary covers %v", got)
	}
	// No part cut a call from its result: each leaf that succeeded has
	// a call's output whenever it has the call.
	for _, in := range f.inputs {
		if strings.Count(in, "[Tool call]") != strings.Count(in, "[Result]") {
			t.Errorf("a part separates calls from results:\n%.300s", in)
		}
	}
	t.Logf("%d summary calls for %d messages", c.Calls, c.Compacted)
}

func TestCompactDoesNotSplitOnOtherErrors(t *testing.T) {
	h := longHistory(10)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  error
		ctx  func() context.Context
	}{
		{"rate limit", &llm.APIError{API: "fake", Status: 429, Type: "rate_limit_error"}, nil},
		{"server error", &llm.APIError{API: "fake", Status: 529, Type: "overloaded_error"}, nil},
		{"no key", llm.ErrNoKey, nil},
		{"canceled", context.Canceled, func() context.Context {
			c, cancel := context.WithCancel(ctx)
			cancel()
			return c
		}},
	} {
		f := &fakeSummarizer{max: 1, err: tc.err}
		w := &Window{Budget: Budget(200_000, 0), Summarize: f.summarize}
		c := ctx
		if tc.ctx != nil {
			c = tc.ctx()
		}
		got, err := w.Compact(c, h, nil)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if got.Calls != 1 {
			t.Errorf("%s: %d calls, want 1", tc.name, got.Calls)
		}
	}
}

func TestCompactGivesUpOnAnUnsplittablePart(t *testing.T) {
	h := longHistory(10)
	f := &fakeSummarizer{max: 100} // less than any one message
	w := &Window{Budget: Budget(200_000, 0), Summarize: f.summarize}
	c, err := w.Compact(context.Background(), h, nil)
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v", err)
	}
	if c.Calls > 2*MaxSplitDepth+1 {
		t.Errorf("%d calls before giving up", c.Calls)
	}
}

func TestCompactMergesThePreviousSummary(t *testing.T) {
	h := longHistory(10)
	f := &fakeSummarizer{}
	w := &Window{Budget: Budget(200_000, 0), Summarize: f.summarize}
	ctx := context.Background()
	first, err := w.Compact(ctx, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	h = append(h, longHistory(14)[40:]...) // turns 10–13, with fresh ids
	for i := range h[40:] {
		h[40+i].ID = fmt.Sprintf("n%05d", i)
	}
	second, err := w.Compact(ctx, h, []Summary{first.Summary})
	if err != nil {
		t.Fatal(err)
	}
	last := f.inputs[len(f.inputs)-1]
	if !strings.Contains(last, "[Earlier summary]\n"+first.Summary.Text) {
		t.Errorf("the second compaction does not see the first summary:\n%.400s", last)
	}
	if strings.Contains(last, "turn-0: uuu") {
		t.Error("the second compaction sees messages the first one covered")
	}
	if got := markers(second.Summary.Text); len(got) != 11 || got[0] != "turn-0" || got[10] != "turn-10" {
		t.Errorf("second summary covers %v", got)
	}
}

func TestCompactNothingToCompact(t *testing.T) {
	var h hist
	h.user("hello")
	w := &Window{Budget: Budget(200_000, 0), Summarize: (&fakeSummarizer{}).summarize}
	if _, err := w.Compact(context.Background(), h.msgs, nil); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("err %v", err)
	}
}

func TestCompactLongRunCutsInsideTheTurn(t *testing.T) {
	// One prompt, then 300 rounds of tool calls: no user turn to cut
	// at, so the cut falls between rounds.
	var h hist
	h.user("turn-0: refactor everything")
	for i := range 300 {
		h.call(fmt.Sprintf("round %d %s", i, strings.Repeat("t", 1200)), strings.Repeat("o", 2000))
	}
	w := &Window{Budget: Budget(64_000, 8_000), Summarize: (&fakeSummarizer{}).summarize, Saver: &fakeSaver{}}
	ctx := context.Background()
	c, err := w.Compact(ctx, h.msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, use, err := w.Build(ctx, h.msgs, []Summary{c.Summary})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRequest(msgs); err != nil {
		t.Error(err)
	}
	if use.Estimated > w.Budget.CompactTarget+w.Budget.SummaryTokens {
		t.Errorf("%d tokens after compaction, target %d", use.Estimated, w.Budget.CompactTarget)
	}
	if msgs[1].Role != llm.Assistant || llm.TextOf(msgs[1]) == SummaryAck {
		t.Errorf("the kept part should start with an assistant round, got %s %q", msgs[1].Role, llm.TextOf(msgs[1]))
	}
	t.Logf("kept %d of %d messages, %d tokens", c.Kept, len(h.msgs), use.Estimated)
}
