package gemini_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

// BenchmarkStream streams a 1,000,000-byte answer that arrives in 5,000
// chunks of 200 bytes and reports the cost per delta: "fake" includes
// the fake server building and flushing each chunk, "replay" serves the
// same bytes recorded once, so it measures mostly the adapter.
func BenchmarkStream(b *testing.B) {
	const deltas = 5000
	answer := strings.Repeat("abcdefghij", 100_000) // 1,000,000 bytes
	turn := llmtest.Turn{Text: answer, InputTokens: 10, OutputTokens: 250_000}
	fake := llmtest.NewGemini(b, turn)

	// Record the fake's SSE body once for the replay server.
	r, _ := http.NewRequest(http.MethodPost, fake.URL+"/v1beta/models/"+testModel+":streamGenerateContent?alt=sse", strings.NewReader("{}"))
	r.Header.Set("x-goog-api-key", testKey)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		b.Fatal(err)
	}
	recorded, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := bytes.Count(recorded, []byte("\n\ndata: ")) + 1; n != deltas {
		b.Fatalf("fake sent %d chunks, want %d", n, deltas)
	}
	replay := llmtest.NewServer(b, []llmtest.Turn{{}}, func(w http.ResponseWriter, _ *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(recorded)
	})

	req := &llm.Request{Model: testModel, Messages: []llm.Message{userText("write a lot")}}
	for _, s := range []struct {
		name string
		srv  *llmtest.Server
	}{{"fake", fake}, {"replay", replay}} {
		b.Run(s.name, func(b *testing.B) {
			m := newModel(b, s.srv)
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				n, size := 0, 0
				for ev, err := range m.Stream(context.Background(), req) {
					if err != nil {
						b.Fatal(err)
					}
					if d, ok := ev.(*llm.TextDelta); ok {
						n++
						size += len(d.Text)
					}
				}
				if n != deltas || size != len(answer) {
					b.Fatalf("%d deltas, %d bytes; want %d, %d", n, size, deltas, len(answer))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*deltas), "ns/delta")
		})
	}
}
