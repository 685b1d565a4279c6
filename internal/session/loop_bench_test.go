package session

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/store"
)

// instantModel answers each request at once: a tool call, then text.
type instantModel struct{ n int }

func (m *instantModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	m.n++
	call := m.n%2 == 1
	return func(yield func(llm.Event, error) bool) {
		evs := []llm.Event{&llm.Answered{Model: "fake/instant"}}
		if call {
			evs = append(evs, &llm.ToolCallStart{Index: 0, ID: "c", Name: "read"}, &llm.ToolCallDone{Index: 0, Call: llm.ToolCall{ID: "c", Name: "read", Input: []byte(`{}`)}},
				&llm.Usage{InputTokens: 100, OutputTokens: 10}, &llm.Done{Stop: llm.StopToolUse})
		} else {
			evs = append(evs, &llm.TextDelta{Text: "done"}, &llm.Usage{InputTokens: 100, OutputTokens: 10}, &llm.Done{Stop: llm.StopEndTurn})
		}
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

type instantTools struct{}

func (instantTools) Specs() []llm.Tool             { return []llm.Tool{{Name: "read"}} }
func (instantTools) Concurrent(*llm.ToolCall) bool { return true }
func (instantTools) Call(context.Context, *llm.ToolCall, agent.CallOptions) agent.Outcome {
	return agent.Outcome{Result: llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "ok"}}}}
}

// BenchmarkLoopTurn is the loop's own cost per turn with an instant
// model and tool, on a real SQLite file (WAL, synchronous FULL): each
// tool turn commits the assistant message before its call runs (one
// synced transaction), the call's start (a lazily synced mark) and the
// results message (one synced transaction); the answer turn one more.
func BenchmarkLoopTurn(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "den.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	cfg := agent.Config{Model: &instantModel{}, ModelRef: "fake/instant", Store: loopStore{st: st}, Tools: instantTools{}}
	b.ReportAllocs()
	for b.Loop() {
		// A fresh session each time (one more synced transaction, counted
		// in), as the history would otherwise grow.
		s, err := st.CreateSession(ctx, "bench", "fake/instant")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := agent.Run(ctx, cfg, s.ID, llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "go"}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1e6, "ms/turn")
}
