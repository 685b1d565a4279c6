package anthropic

import (
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

// BenchmarkStream streams a 1 MB answer in 5,000 text deltas from the
// fake server and reports the cost per delta (HTTP, SSE parsing, the
// SDK's decoding and the mapping to llm events).
func BenchmarkStream(b *testing.B) {
	const size, deltas = 1_000_000, 5_000
	text := strings.Repeat("den streams text. ", size/18+1)[:size]
	s := llmtest.NewAnthropic(b, llmtest.Turn{Text: text, InputTokens: 10, OutputTokens: 250_000})
	m := newModel(b, s)
	req := hello()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n, got := 0, 0
		for ev, err := range m.Stream(b.Context(), req) {
			if err != nil {
				b.Fatal(err)
			}
			if d, ok := ev.(*llm.TextDelta); ok {
				n++
				got += len(d.Text)
			}
		}
		if n != deltas || got != size {
			b.Fatalf("got %d bytes in %d deltas, want %d in %d", got, n, size, deltas)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*deltas), "ns/delta")
}
