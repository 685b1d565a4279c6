package mcpclient

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
)

// BenchmarkCallInComputer measures a call of a warm stdio server's tool
// inside a busybox computer, as the model's call runs: through the
// registry (schema check), the permission gate (its audit row in
// SQLite), the server, and the result made den's. protocol is the same
// call on the same connection through the SDK alone: the transport and
// the server's own time. Each reports its median, p50-ms; den's part
// of a call is the difference.
func BenchmarkCallInComputer(b *testing.B) {
	box := newBox(b)
	g := newGate(b, permission.Policy{})
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: box.start, DataDir: box.data, Gate: g,
		Servers: []*Server{server("t", false, "den-test-mcp")}})
	defer set.Close()
	ctx := context.Background()
	reg := registry(b, set.Offer(ctx, 0))
	call := llm.ToolCall{ID: "c1", Name: "mcp__t__echo", Input: json.RawMessage(`{"text": "ping"}`)}
	if r, err := reg.Call(ctx, box.env, call, false); err != nil || r.IsError {
		b.Fatalf("warm-up: %+v %v", r, err)
	}
	median := func(b *testing.B, f func()) {
		var times []time.Duration
		for b.Loop() {
			start := time.Now()
			f()
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	}
	b.Run("den", func(b *testing.B) {
		median(b, func() {
			if r, err := reg.Call(ctx, box.env, call, false); err != nil || r.IsError {
				b.Fatalf("%+v %v", r, err)
			}
		})
	})
	b.Run("protocol", func(b *testing.B) {
		cn, err := set.clients["t"].session(ctx)
		if err != nil {
			b.Fatal(err)
		}
		median(b, func() {
			if _, err := cn.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkOffer measures what each turn pays for a server's tools once
// den knows them: the offer (names, schemas converted, the budget) and
// the registry the session makes of it.
func BenchmarkOffer(b *testing.B) {
	box := newBox(b)
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: box.start, DataDir: box.data, Gate: newGate(b, permission.Policy{}),
		Servers: []*Server{server("t", false, "den-test-mcp")}})
	defer set.Close()
	ctx := context.Background()
	if o := set.Offer(ctx, 200000); len(o.Tools) != 10 {
		b.Fatalf("%d tools", len(o.Tools))
	}
	for b.Loop() {
		registry(b, set.Offer(ctx, 200000))
	}
}
