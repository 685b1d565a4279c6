package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/agent/loopguard"
	"den.dev/den/internal/llm"
)

// scripted is a model that answers with prepared turns, recording the
// requests it got.
type scripted struct {
	mu    sync.Mutex
	turns [][]llm.Event
	reqs  []*llm.Request
	block chan struct{} // when set, the stream waits on it after its first event
}

func (m *scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		var evs []llm.Event
		if len(m.turns) > 0 {
			evs, m.turns = m.turns[0], m.turns[1:]
		}
		m.mu.Unlock()
		for i, ev := range evs {
			if !yield(ev, nil) {
				return
			}
			if i == 0 && m.block != nil {
				select {
				case <-m.block:
				case <-ctx.Done():
					yield(nil, ctx.Err())
					return
				}
			}
		}
	}
}

func textTurn(s string) []llm.Event {
	return []llm.Event{&llm.TextDelta{Text: s[:len(s)/2]}, &llm.TextDelta{Text: s[len(s)/2:]}, &llm.Usage{InputTokens: 10, OutputTokens: 5}, &llm.Done{Stop: llm.StopEndTurn}}
}

func callTurn(calls ...llm.ToolCall) []llm.Event {
	var evs []llm.Event
	for i, c := range calls {
		evs = append(evs, &llm.ToolCallStart{Index: i, ID: c.ID, Name: c.Name}, &llm.ToolCallDelta{Index: i, JSON: string(c.Input)}, &llm.ToolCallDone{Index: i, Call: llm.ToolCall{ID: c.ID, Name: c.Name}})
	}
	return append(evs, &llm.Done{Stop: llm.StopToolUse})
}

// memStore keeps history in memory, checking that appends keep calls
// and results paired.
type memStore struct {
	mu      sync.Mutex
	msgs    []llm.Message
	appends int
}

func (s *memStore) Append(_ context.Context, _ string, msgs ...llm.Message) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
	s.appends++
	return make([]string, len(msgs)), nil
}

func (s *memStore) History(context.Context, string) ([]llm.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.msgs...), nil
}

// fakeTools records the order calls start and end.
type fakeTools struct {
	running, peak atomic.Int32
	mu            sync.Mutex
	order         []string
	concurrent    map[string]bool
}

func (f *fakeTools) Specs() []llm.Tool { return []llm.Tool{{Name: "read"}, {Name: "write"}} }

func (f *fakeTools) Concurrent(c *llm.ToolCall) bool { return c.Name == "read" }

func (f *fakeTools) Call(ctx context.Context, c *llm.ToolCall, concurrent bool) llm.ToolResult {
	n := f.running.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
	f.running.Add(-1)
	f.mu.Lock()
	f.order = append(f.order, c.ID)
	if f.concurrent == nil {
		f.concurrent = map[string]bool{}
	}
	f.concurrent[c.ID] = concurrent
	f.mu.Unlock()
	return llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "result of " + c.ID}}}
}

func mkcall(id, name string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Input: json.RawMessage(`{"x":1}`)}
}

func prompt(s string) llm.Message {
	return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: s}}}
}

func TestRunToolsThenAnswer(t *testing.T) {
	m := &scripted{turns: [][]llm.Event{
		callTurn(mkcall("a", "read"), mkcall("b", "read"), mkcall("c", "write"), mkcall("d", "read")),
		textTurn("all done"),
	}}
	store := &memStore{}
	tools := &fakeTools{}
	var events []Event
	res, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools, Emit: func(e Event) { events = append(events, e) }}, "s", prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != llm.StopEndTurn || res.Text != "all done" || res.Turns != 2 {
		t.Errorf("result %+v", res)
	}
	// a and b ran together; c alone after them; d after c.
	if tools.peak.Load() != 2 || !tools.concurrent["a"] || tools.concurrent["c"] || tools.concurrent["d"] {
		t.Errorf("peak %d, concurrent %v", tools.peak.Load(), tools.concurrent)
	}
	if o := tools.order; len(o) != 4 || o[2] != "c" || o[3] != "d" {
		t.Errorf("order %v", o)
	}
	// History: prompt, assistant with calls, results in call order, answer.
	h := store.msgs
	if len(h) != 4 || h[1].Role != llm.Assistant || h[2].Role != llm.User || h[3].Role != llm.Assistant {
		t.Fatalf("history %+v", h)
	}
	var ids []string
	for _, p := range h[2].Parts {
		ids = append(ids, p.(*llm.ToolResult).CallID)
	}
	if len(ids) != 4 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" || ids[3] != "d" {
		t.Errorf("results out of order: %v", ids)
	}
	// The assistant turn and its results were one append.
	if store.appends != 3 {
		t.Errorf("appends %d, want 3 (prompt, turn+results, answer)", store.appends)
	}
	// The second request carried the results.
	if last := m.reqs[1].Messages; len(last) != 3 {
		t.Errorf("second request has %d messages", len(last))
	}
	var calls, results int
	for _, e := range events {
		switch e.(type) {
		case *ToolCallEvent:
			calls++
		case *ToolResultEvent:
			results++
		}
	}
	if calls != 4 || results != 4 {
		t.Errorf("events: %d calls, %d results", calls, results)
	}
}

func TestMaxTurns(t *testing.T) {
	var turns [][]llm.Event
	for i := range 5 {
		turns = append(turns, callTurn(mkcall(string(rune('a'+i)), "read")))
	}
	m := &scripted{turns: turns}
	store := &memStore{}
	res, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &fakeTools{}, MaxTurns: 3}, "s", prompt("loop"))
	if !errors.Is(err, ErrMaxTurns) || res.Turns != 3 {
		t.Errorf("%v %+v", err, res)
	}
	assertPaired(t, store.msgs)
}

func TestCancelKeepsHistoryConsistent(t *testing.T) {
	m := &scripted{turns: [][]llm.Event{textTurn("partial answer that never ends")}, block: make(chan struct{})}
	store := &memStore{}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Run(ctx, Config{Model: m, Store: store, Tools: &fakeTools{}}, "s", prompt("hi"))
	if !errors.Is(err, ErrCanceled) {
		t.Fatalf("err %v", err)
	}
	if len(store.msgs) != 2 || llm.TextOf(store.msgs[1]) == "" {
		t.Errorf("partial text not kept: %+v", store.msgs)
	}
}

func TestRepairOrphanCalls(t *testing.T) {
	store := &memStore{msgs: []llm.Message{prompt("x"), {Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "k", Name: "read", Input: json.RawMessage(`{}`)}}}}}
	m := &scripted{turns: [][]llm.Event{textTurn("ok")}}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &fakeTools{}}, "s", prompt("again")); err != nil {
		t.Fatal(err)
	}
	assertPaired(t, store.msgs)
}

// constTools answers every call the same way, counting the calls.
type constTools struct{ calls atomic.Int32 }

func (*constTools) Specs() []llm.Tool {
	return []llm.Tool{{Name: "write", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}}
}
func (*constTools) Concurrent(*llm.ToolCall) bool { return false }
func (t *constTools) Call(context.Context, *llm.ToolCall, bool) llm.ToolResult {
	t.calls.Add(1)
	return llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "same"}}}
}

func resultsOf(msgs []llm.Message) []*llm.ToolResult {
	var out []*llm.ToolResult
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestCallsAreRepaired(t *testing.T) {
	m := &scripted{turns: [][]llm.Event{
		callTurn(
			llm.ToolCall{ID: "a", Name: "Write", Input: json.RawMessage(`{"n":"5"`)},
			llm.ToolCall{ID: "b", Name: "nope", Input: json.RawMessage(`{}`)},
			llm.ToolCall{ID: "c", Name: "write", Input: json.RawMessage(`{"n": oops}`)},
		),
		textTurn("done"),
	}}
	store := &memStore{}
	tools := &constTools{}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools}, "s", prompt("go")); err != nil {
		t.Fatal(err)
	}
	assertPaired(t, store.msgs)
	if n := tools.calls.Load(); n != 1 {
		t.Errorf("%d calls ran, want 1 (the repaired one)", n)
	}
	// History records the call as it ran.
	if c := llm.Calls(store.msgs[1])[0]; c.Name != "write" || string(c.Input) != `{"n":5}` {
		t.Errorf("stored call %s %s", c.Name, c.Input)
	}
	rs := resultsOf(store.msgs)
	if len(rs) != 3 || rs[0].Name != "write" || !strings.Contains(resultText(*rs[0]), "den repaired this call") ||
		!rs[1].IsError || !strings.Contains(resultText(*rs[1]), `Unknown tool "nope"`) ||
		!rs[2].IsError || !strings.Contains(resultText(*rs[2]), "not valid JSON") {
		for _, r := range rs {
			t.Logf("%s %v %q", r.CallID, r.IsError, resultText(*r))
		}
		t.Error("unexpected results")
	}
}

func TestLoopIsBlocked(t *testing.T) {
	var turns [][]llm.Event
	for i := range 4 {
		turns = append(turns, callTurn(llm.ToolCall{ID: fmt.Sprint("c", i), Name: "write", Input: json.RawMessage(`{"n":1,"tool_title":"` + fmt.Sprint(i) + `"}`)}))
	}
	m := &scripted{turns: append(turns, textTurn("giving up"))}
	store := &memStore{}
	tools := &constTools{}
	_, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools, LoopGuard: loopguard.Config{Warning: 2, Breaker: 3}}, "s", prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	assertPaired(t, store.msgs)
	if n := tools.calls.Load(); n != 3 {
		t.Errorf("%d calls ran, want 3", n)
	}
	rs := resultsOf(store.msgs)
	if len(rs) != 4 || !strings.Contains(resultText(*rs[1]), "[LOOP WARNING]") || !strings.HasPrefix(resultText(*rs[3]), loopguard.BlockedPrefix) || rs[3].CallID != "c3" {
		for _, r := range rs {
			t.Logf("%s %v %q", r.CallID, r.IsError, resultText(*r))
		}
		t.Error("unexpected results")
	}
}

// assertPaired checks every call has exactly one result in the next
// message and no two consecutive messages share a role.
func assertPaired(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			t.Errorf("messages %d and %d share role %s", i-1, i, m.Role)
		}
		calls := llm.Calls(m)
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(msgs) {
			t.Errorf("calls of message %d have no results", i)
			continue
		}
		got := map[string]int{}
		for _, p := range msgs[i+1].Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				got[r.CallID]++
			}
		}
		for _, c := range calls {
			if got[c.ID] != 1 {
				t.Errorf("call %s has %d results", c.ID, got[c.ID])
			}
		}
	}
}

func BenchmarkLoopOverhead(b *testing.B) {
	// One turn with a tool call and one answer, instant model and tools:
	// what the loop itself costs per turn.
	tools := &instantTools{}
	b.ReportAllocs()
	for b.Loop() {
		m := &scripted{turns: [][]llm.Event{callTurn(mkcall("a", "read")), textTurn("done")}}
		if _, err := Run(context.Background(), Config{Model: m, Store: &memStore{}, Tools: tools}, "s", prompt("go")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1e6, "ms/turn")
}

type instantTools struct{}

func (instantTools) Specs() []llm.Tool             { return []llm.Tool{{Name: "read"}} }
func (instantTools) Concurrent(*llm.ToolCall) bool { return true }
func (instantTools) Call(context.Context, *llm.ToolCall, bool) llm.ToolResult {
	return llm.ToolResult{}
}

func TestBudgetStopsBeforeCrossing(t *testing.T) {
	var turns [][]llm.Event
	for i := range 10 {
		turns = append(turns, append(callTurn(mkcall(string(rune('a'+i)), "read"))[:3], &llm.Usage{InputTokens: 1000, OutputTokens: 1000}, &llm.Done{Stop: llm.StopToolUse}))
	}
	m := &scripted{turns: turns}
	store := &memStore{}
	price := func(u llm.Usage) float64 { return float64(u.InputTokens+u.OutputTokens) / 1e6 } // $1 per million
	_, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &fakeTools{}, Cost: price,
		Budget: Budget{MaxCostUSD: 0.0055}}, "s", prompt("spend"))
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("err %v", err)
	}
	// Each turn costs $0.002: the third request would cross $0.0055.
	if len(m.reqs) != 2 {
		t.Errorf("%d requests sent, want 2", len(m.reqs))
	}
	assertPaired(t, store.msgs)
	m = &scripted{turns: turns}
	_, err = Run(context.Background(), Config{Model: m, Store: &memStore{}, Tools: &fakeTools{},
		Budget: Budget{MaxTokens: 5000, SpentTokens: 1500}}, "s", prompt("spend"))
	if !errors.Is(err, ErrBudget) || len(m.reqs) != 1 {
		t.Errorf("token budget: %v after %d requests", err, len(m.reqs))
	}
}
