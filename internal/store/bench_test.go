package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAppend commits one turn per iteration: an assistant message
// with three tool calls and the user message with their three results,
// to one growing session, with a synced WAL commit each time.
func BenchmarkAppend(b *testing.B) {
	s := openTemp(b)
	sess := newSession(b, s, "bench")
	ctx := context.Background()
	msgs := turn("bench", 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, sess.ID, msgs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistory reads back a 100-turn session (200 messages).
func BenchmarkHistory(b *testing.B) {
	s := openTemp(b)
	sess := newSession(b, s, "bench")
	ctx := context.Background()
	for i := range 100 {
		mustAppend(b, s, sess.ID, turn(fmt.Sprint(i), 3)...)
	}
	b.ReportAllocs()
	for b.Loop() {
		h, err := s.History(ctx, sess.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(h) != 200 {
			b.Fatalf("%d messages", len(h))
		}
	}
}
