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
// and results paired, with the write-ahead record of each call.
type memStore struct {
	mu      sync.Mutex
	msgs    []llm.Message
	metas   []Meta
	appends int
	calls   map[string]*OpenCall // by call id, for the head message's calls
	open    string               // the head message's id while its calls are unanswered
	queued  []string
	events  []string // what was recorded, in order: "append:assistant", "started:a", "finished:a", …
}

func (s *memStore) Append(_ context.Context, _ string, meta Meta, msgs ...llm.Message) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(msgs))
	all := msgs
	if meta.Deliver {
		for _, q := range s.queued {
			all = append(all[:len(all):len(all)], llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: q}}})
		}
		s.queued = nil
	}
	for i, m := range all {
		if i >= len(msgs) {
			id := fmt.Sprint("q", len(s.msgs)+1)
			s.msgs = append(s.msgs, m)
			s.metas = append(s.metas, meta)
			s.events = append(s.events, "append:queued")
			if meta.Delivered != nil {
				*meta.Delivered = append(*meta.Delivered, id)
			}
			continue
		}
		s.msgs = append(s.msgs, m)
		s.metas = append(s.metas, meta)
		ids[i] = fmt.Sprint("m", len(s.msgs))
		s.events = append(s.events, "append:"+string(m.Role))
		s.open = ""
		if calls := llm.Calls(m); len(calls) > 0 {
			s.open, s.calls = ids[i], map[string]*OpenCall{}
			for _, c := range calls {
				s.calls[c.ID] = &OpenCall{Call: *c}
			}
		}
	}
	s.appends++
	return ids, nil
}

func (s *memStore) History(context.Context, string) ([]llm.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.msgs...), nil
}

func (s *memStore) call(msgID, callID string) (*OpenCall, error) {
	if msgID != s.open || s.calls[callID] == nil {
		return nil, fmt.Errorf("no call %s in %s (open: %s)", callID, msgID, s.open)
	}
	return s.calls[callID], nil
}

func (s *memStore) CallStarted(_ context.Context, msgID, callID string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.call(msgID, callID)
	if err == nil {
		c.Started = at
		s.events = append(s.events, "started:"+callID)
	}
	return err
}

func (s *memStore) CallOutput(_ context.Context, msgID, callID, tail string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.call(msgID, callID)
	if err == nil {
		c.Output, c.Seen = tail, at
	}
	return err
}

func (s *memStore) CallFinished(_ context.Context, msgID string, r CallRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.call(msgID, r.Result.CallID)
	if err == nil {
		res := r.Result
		c.Result, c.Duration, c.ExitCode = &res, r.Duration, r.ExitCode
		s.events = append(s.events, "finished:"+r.Result.CallID)
	}
	return err
}

func (s *memStore) OpenCalls(context.Context, string) (string, []OpenCall, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == "" {
		return "", nil, nil
	}
	var out []OpenCall
	for _, c := range llm.Calls(s.msgs[len(s.msgs)-1]) {
		out = append(out, *s.calls[c.ID])
	}
	return s.open, out, nil
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

func (f *fakeTools) Call(ctx context.Context, c *llm.ToolCall, o CallOptions) Outcome {
	concurrent := o.Concurrent
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
	return Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "result of " + c.ID}}}}
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
	// Written ahead: prompt, the assistant turn (before any call ran),
	// its results, the answer.
	if store.appends != 4 {
		t.Errorf("appends %d, want 4 (prompt, turn, results, answer)", store.appends)
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
	store := &memStore{}
	store.Append(context.Background(), "s", Meta{}, prompt("x"), llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "k", Name: "read", Input: json.RawMessage(`{}`)}}})
	m := &scripted{turns: [][]llm.Event{textTurn("ok")}}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &fakeTools{}}, "s", prompt("again")); err != nil {
		t.Fatal(err)
	}
	// The repair is its own message, before the prompt: the model sees
	// them as one.
	assertPaired(t, llm.Pair(store.msgs))
	assertPaired(t, m.reqs[0].Messages)
}

// watchTools checks, as each call runs, that its assistant message is
// already stored (write-ahead), and prints output slowly.
type watchTools struct {
	store *memStore
	t     *testing.T
	sleep time.Duration
}

func (*watchTools) Specs() []llm.Tool               { return []llm.Tool{{Name: "read"}, {Name: "write"}} }
func (*watchTools) Concurrent(c *llm.ToolCall) bool { return c.Name == "read" }
func (w *watchTools) Call(ctx context.Context, c *llm.ToolCall, o CallOptions) Outcome {
	w.store.mu.Lock()
	last := w.store.msgs[len(w.store.msgs)-1]
	open := w.store.calls[c.ID]
	w.store.mu.Unlock()
	if last.Role != llm.Assistant || open == nil || open.Started.IsZero() {
		w.t.Errorf("call %s runs before its message and start are stored (last: %s)", c.ID, last.Role)
	}
	o.Output("line 1 of " + c.ID + "\n")
	time.Sleep(w.sleep)
	code := 3
	return Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "done " + c.ID}}}, ExitCode: &code}
}

// TestWriteAhead: the turn's assistant message is stored before any of
// its calls runs; each call's start is recorded before it runs and its
// result as soon as it is ready (but the last, which goes straight into
// the results message); the output tail is saved while a call runs;
// durations and exit codes reach the events.
func TestWriteAhead(t *testing.T) {
	m := &scripted{turns: [][]llm.Event{callTurn(mkcall("a", "read"), mkcall("b", "read"), mkcall("c", "write")), textTurn("ok")}}
	store := &memStore{}
	tools := &watchTools{store: store, t: t, sleep: 1200 * time.Millisecond}
	var results []*ToolResultEvent
	_, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools, Emit: func(e Event) {
		if r, ok := e.(*ToolResultEvent); ok {
			results = append(results, r)
		}
	}}, "s", prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	ev := strings.Join(store.events, " ")
	if !strings.HasPrefix(ev, "append:user append:assistant started:") {
		t.Errorf("the assistant message was not stored first: %s", ev)
	}
	for _, id := range []string{"a", "b"} {
		if !strings.Contains(ev, "finished:"+id) {
			t.Errorf("the result of %s was not recorded when ready: %s", id, ev)
		}
	}
	if strings.Contains(ev, "finished:c") || !strings.HasSuffix(ev, "started:c append:user append:assistant") {
		t.Errorf("the last result should go straight into the results message: %s", ev)
	}
	store.mu.Lock()
	out := store.calls
	store.mu.Unlock()
	_ = out
	if len(results) != 3 || results[0].ExitCode == nil || *results[0].ExitCode != 3 || results[2].Duration < time.Second {
		t.Errorf("result events: %+v", results)
	}
}

// TestRepairAfterKill: a den killed while calls ran left a finished
// call, a running one (with its output and the last time it was seen)
// and one that never started. The next run answers them truthfully
// before the new prompt, and the model sees it.
func TestRepairAfterKill(t *testing.T) {
	store := &memStore{}
	ctx := context.Background()
	store.Append(ctx, "s", Meta{}, prompt("install it"), llm.Message{Role: llm.Assistant, Parts: []llm.Part{
		&llm.ToolCall{ID: "done", Name: "read", Input: json.RawMessage(`{}`)},
		&llm.ToolCall{ID: "running", Name: "write", Input: json.RawMessage(`{}`)},
		&llm.ToolCall{ID: "never", Name: "write", Input: json.RawMessage(`{}`)},
	}})
	t0 := time.Now().Add(-time.Hour)
	store.CallStarted(ctx, "m2", "done", t0)
	store.CallFinished(ctx, "m2", CallRecord{Result: llm.ToolResult{CallID: "done", Name: "read", Content: []llm.Part{&llm.Text{Text: "the file"}}}, Duration: time.Second})
	store.CallStarted(ctx, "m2", "running", t0)
	store.CallOutput(ctx, "m2", "running", "Unpacking python3 ...\n", t0.Add(42*time.Second))
	m := &scripted{turns: [][]llm.Event{textTurn("I see it was interrupted")}}
	var warned bool
	if _, err := Run(ctx, Config{Model: m, Store: store, Tools: &fakeTools{}, Emit: func(e Event) {
		if _, ok := e.(*WarningEvent); ok {
			warned = true
		}
	}}, "s", prompt("go on")); err != nil {
		t.Fatal(err)
	}
	assertPaired(t, llm.Pair(store.msgs))
	sent := m.reqs[0].Messages
	var texts []string
	for _, r := range resultsOf(sent) {
		texts = append(texts, r.CallID+": "+resultText(*r))
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"done: the file", "running: interrupted: den stopped while this call was running, after it had run for 42s", "Unpacking python3", "never: not run: den stopped before this call started"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model was not told %q; it got:\n%s", want, all)
		}
	}
	if !warned {
		t.Error("no warning event")
	}
	// The repair is stored, so it shows in the history too.
	if h := store.msgs; len(h) < 4 || len(resultsOf(h[2:3])) != 3 {
		t.Errorf("repair not stored as its own message: %d messages", len(h))
	}
}

// TestQueuedAtTurnBoundary: a message queued for a session while its
// turn runs joins the conversation after the turn's results, as a
// message of its own, not in the middle; the faces are told of each
// message committed.
func TestQueuedAtTurnBoundary(t *testing.T) {
	store := &memStore{}
	m := &scripted{turns: [][]llm.Event{callTurn(mkcall("a", "write")), textTurn("ok")}}
	tools := &queueingTools{store: store}
	var msgEvents []*MessageEvent
	emit := func(e Event) {
		if me, ok := e.(*MessageEvent); ok {
			msgEvents = append(msgEvents, me)
		}
	}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools, Emit: emit}, "s", prompt("go")); err != nil {
		t.Fatal(err)
	}
	if len(store.msgs) != 5 || store.msgs[3].Role != llm.User || !strings.Contains(llm.TextOf(store.msgs[3]), "[message from session other]") {
		t.Errorf("queued message not after the results message: %+v", store.msgs)
	}
	var roles []string
	for _, e := range msgEvents {
		r := string(e.Role)
		if e.Queued {
			r += "(queued)"
		}
		roles = append(roles, r)
	}
	if got := strings.Join(roles, " "); got != "user assistant user user(queued) assistant" {
		t.Errorf("message events: %s", got)
	}
	assertPaired(t, llm.Alternate(store.msgs))
}

// TestRunQueueOnly: a run without a prompt answers what was queued, and
// one with nothing queued does nothing.
func TestRunQueueOnly(t *testing.T) {
	store := &memStore{queued: []string{"hello"}}
	m := &scripted{turns: [][]llm.Event{textTurn("hi")}}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &constTools{}}, "s", llm.Message{Role: llm.User}); err != nil {
		t.Fatal(err)
	}
	if len(store.msgs) != 2 || llm.TextOf(store.msgs[0]) != "hello" || llm.TextOf(store.msgs[1]) != "hi" {
		t.Errorf("history %+v", store.msgs)
	}
	if _, err := Run(context.Background(), Config{Model: m, Store: store, Tools: &constTools{}}, "s", llm.Message{Role: llm.User}); !errors.Is(err, ErrNothingToDo) {
		t.Errorf("nothing queued: %v, want ErrNothingToDo", err)
	}
}

type queueingTools struct{ store *memStore }

func (*queueingTools) Specs() []llm.Tool             { return []llm.Tool{{Name: "write"}} }
func (*queueingTools) Concurrent(*llm.ToolCall) bool { return false }
func (q *queueingTools) Call(context.Context, *llm.ToolCall, CallOptions) Outcome {
	q.store.mu.Lock()
	q.store.queued = append(q.store.queued, "[message from session other]\nhello")
	q.store.mu.Unlock()
	return Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "ok"}}}}
}

// constTools answers every call the same way, counting the calls.
type constTools struct{ calls atomic.Int32 }

func (*constTools) Specs() []llm.Tool {
	return []llm.Tool{{Name: "write", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}}
}
func (*constTools) Concurrent(*llm.ToolCall) bool { return false }
func (t *constTools) Call(context.Context, *llm.ToolCall, CallOptions) Outcome {
	t.calls.Add(1)
	return Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "same"}}}}
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
func (instantTools) Call(context.Context, *llm.ToolCall, CallOptions) Outcome {
	return Outcome{}
}

func TestBudgetStopsBeforeCrossing(t *testing.T) {
	var turns [][]llm.Event
	for i := range 10 {
		turns = append(turns, append(callTurn(mkcall(string(rune('a'+i)), "read"))[:3], &llm.Usage{InputTokens: 1000, OutputTokens: 1000}, &llm.Done{Stop: llm.StopToolUse}))
	}
	m := &scripted{turns: turns}
	store := &memStore{}
	price := func(_ string, u llm.Usage) float64 { return float64(u.InputTokens+u.OutputTokens) / 1e6 } // $1 per million
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

// TestBudgetCountsOthers: what other runs spend against a run's
// limits (its sub-agents') stops it as its own spending would, and a
// shared limit (a parent's) is asked before each request.
func TestBudgetCountsOthers(t *testing.T) {
	var turns [][]llm.Event
	for i := range 10 {
		turns = append(turns, append(callTurn(mkcall(string(rune('a'+i)), "read"))[:3], &llm.Usage{InputTokens: 1000, OutputTokens: 1000}, &llm.Done{Stop: llm.StopToolUse}))
	}
	price := func(_ string, u llm.Usage) float64 { return float64(u.InputTokens+u.OutputTokens) / 1e6 }
	others := 0.0
	m := &scripted{turns: turns}
	_, err := Run(context.Background(), Config{Model: m, Store: &memStore{}, Tools: &fakeTools{}, Cost: price,
		Budget: Budget{MaxCostUSD: 0.0055, Others: func() (float64, int64) {
			others += 0.002 // a sub-agent spends as much as the run between its requests
			return others, 0
		}}}, "s", prompt("spend"))
	// $0.002 spent by the run and $0.004 by the others before the second
	// request's check: it would cross $0.0055.
	if !errors.Is(err, ErrBudget) || len(m.reqs) != 1 {
		t.Errorf("with others spending: %v after %d requests, want ErrBudget after 1", err, len(m.reqs))
	}
	asked := 0
	m = &scripted{turns: turns}
	_, err = Run(context.Background(), Config{Model: m, Store: &memStore{}, Tools: &fakeTools{}, Cost: price,
		Budget: Budget{Shared: func(tokens int64, cost float64) error {
			asked++
			if tokens <= 0 || cost <= 0 {
				t.Errorf("shared limit asked with %d tokens, $%f", tokens, cost)
			}
			if asked == 3 {
				return fmt.Errorf("%w: the parent's budget", ErrBudget)
			}
			return nil
		}}}, "s", prompt("spend"))
	if !errors.Is(err, ErrBudget) || len(m.reqs) != 2 {
		t.Errorf("shared limit: %v after %d requests, want ErrBudget after 2", err, len(m.reqs))
	}
}

// TestSystemPromptSaysOnlyWhatIsTrue: folders and commands of features
// the agent does not have are not mentioned.
func TestSystemPromptSaysOnlyWhatIsTrue(t *testing.T) {
	c := Computer{Distro: "alpine", Version: "3.21", PackageManager: "apk", Network: true}
	plain := SystemPrompt(c, "", time.Now())
	for _, absent := range []string{"/den/browser", "/den/memory", "/den/skills", "/den/attachments", "den-notify"} {
		if strings.Contains(plain, absent) {
			t.Errorf("the prompt mentions %s, which this agent does not have", absent)
		}
	}
	c.Features = Features{Browser: true, Memory: true, Skills: true, Attachments: true, HostCommands: true}
	full := SystemPrompt(c, "", time.Now())
	for _, present := range []string{"/den/browser", "/den/memory", "/den/skills", "/den/attachments", "den-notify"} {
		if !strings.Contains(full, present) {
			t.Errorf("the prompt omits %s, which this agent has", present)
		}
	}
}

// TestHaltAtTurnBoundary: a run asked to halt stops after the turn's
// results are committed, before the next request.
func TestHaltAtTurnBoundary(t *testing.T) {
	store := &memStore{}
	m := &scripted{turns: [][]llm.Event{callTurn(mkcall("a", "write")), textTurn("never asked")}}
	halt := false
	tools := &haltingTools{halt: &halt}
	_, err := Run(context.Background(), Config{Model: m, Store: store, Tools: tools, Halt: func() bool { return halt }}, "s", prompt("go"))
	if !errors.Is(err, ErrHalted) {
		t.Fatalf("err %v, want ErrHalted", err)
	}
	if len(store.msgs) != 3 || len(m.reqs) != 1 {
		t.Errorf("%d messages, %d requests: want the results committed and no second request", len(store.msgs), len(m.reqs))
	}
	assertPaired(t, store.msgs)
}

type haltingTools struct{ halt *bool }

func (*haltingTools) Specs() []llm.Tool             { return []llm.Tool{{Name: "write"}} }
func (*haltingTools) Concurrent(*llm.ToolCall) bool { return false }
func (h *haltingTools) Call(context.Context, *llm.ToolCall, CallOptions) Outcome {
	*h.halt = true
	return Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "ok"}}}}
}
