package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/llm"
)

// TestWriteAheadCalls: what the loop records of running calls survives
// a reopen of the file (another den), and OpenCalls returns it until the
// results message arrives.
func TestWriteAheadCalls(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/den.db"
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, s, "a")
	msgs := turn("t", 3)
	ids, err := s.AppendWith(ctx, sess.ID, AppendOptions{Model: "x/answered", Usage: &UsageRecord{Model: "x/answered", Purpose: PurposeConversation, InputTokens: 7, OutputTokens: 3, CostUSD: 0.5}}, user("go"), msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	msgID := ids[1]
	t0 := time.Now().Add(-time.Minute)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CallStarted(ctx, msgID, "t-call-0", t0))
	code := 2
	must(s.CallFinished(ctx, msgID, CallResult{Result: llm.ToolResult{CallID: "t-call-0", Name: "shell", Content: []llm.Part{&llm.Text{Text: "first"}}}, Duration: 1500 * time.Millisecond, ExitCode: &code}))
	must(s.CallStarted(ctx, msgID, "t-call-1", t0))
	must(s.CallOutput(ctx, msgID, "t-call-1", strings.Repeat("x", MaxOutputTail+10)+"END", t0.Add(9*time.Second)))
	if err := s.CallStarted(ctx, msgID, "no-such-call", t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("a call that is not there: %v", err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, calls, err := s.OpenCalls(ctx, sess.ID)
	if err != nil || head != msgID || len(calls) != 3 {
		t.Fatalf("open calls: %s %+v %v", head, calls, err)
	}
	c0, c1, c2 := calls[0], calls[1], calls[2]
	if c0.Result == nil || llm.TextOf(llm.Message{Parts: c0.Result.Content}) != "first" || c0.Duration != 1500*time.Millisecond || c0.ExitCode == nil || *c0.ExitCode != 2 {
		t.Errorf("finished call: %+v", c0)
	}
	if c1.Result != nil || c1.Started.Sub(t0).Abs() > time.Microsecond || c1.Seen.Sub(c1.Started).Round(time.Second) != 9*time.Second ||
		!strings.HasSuffix(c1.Output, "END") || len(c1.Output) != MaxOutputTail {
		t.Errorf("running call: started %v seen %v output %d bytes", c1.Started, c1.Seen, len(c1.Output))
	}
	if !c2.Started.IsZero() || c2.Result != nil {
		t.Errorf("call that never started: %+v", c2)
	}
	// The results message closes them; the recorded duration stands.
	mustAppend(t, s, sess.ID, msgs[1])
	if head, calls, _ := s.OpenCalls(ctx, sess.ID); head != "" || len(calls) != 0 {
		t.Errorf("still open after the results: %s %v", head, calls)
	}
	tc, _ := s.ToolCalls(ctx, sess.ID)
	if len(tc) != 3 || tc[0].Duration != 1500*time.Millisecond || tc[0].ExitCode == nil {
		t.Errorf("tool calls: %+v", tc)
	}
	// The assistant message carries its model and its request's usage.
	path2, _ := s.Path(ctx, sess.ID)
	use, _ := s.MessageUsage(ctx, sess.ID)
	if path2[1].Model != "x/answered" || use[msgID].InputTokens != 7 || use[msgID].CostUSD != 0.5 {
		t.Errorf("model %q, usage %+v", path2[1].Model, use[msgID])
	}
	if got, _ := s.SessionUsage(ctx, sess.ID); got.Requests != 1 || got.InputTokens != 7 {
		t.Errorf("session totals: %+v", got)
	}
}

// TestQueueDeliveredWithAppend: a queued message enters the history in
// the same transaction that takes it off the queue, once, as a message
// of its own with the id it was given when queued.
func TestQueueDeliveredWithAppend(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	sess := newSession(t, s, "a")
	q, err := s.Enqueue(ctx, sess.ID, "other", "hello from there")
	if err != nil || q.MessageID == "" {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	if _, err := s.Enqueue(ctx, "nosuch", "", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("queue to a missing session: %v", err)
	}
	var got []Queued
	ids, err := s.AppendWith(ctx, sess.ID, AppendOptions{DeliverQueued: true, Delivered: &got}, user("mine"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("append: %v %v", ids, err)
	}
	path, _ := s.Path(ctx, sess.ID)
	if len(got) != 1 || len(path) != 2 || llm.TextOf(path[0].Message) != "mine" || path[1].ID != q.MessageID ||
		llm.TextOf(path[1].Message) != "[message from session other]\nhello from there" {
		t.Errorf("delivered %v, history %+v", got, path)
	}
	got = nil
	s.AppendWith(ctx, sess.ID, AppendOptions{DeliverQueued: true, Delivered: &got}, assistant("ok"), user("again"))
	if len(got) != 0 {
		t.Errorf("delivered twice: %v", got)
	}

	// With nothing but the queue: a person's message with an image.
	img := &llm.Image{MediaType: "image/png", Data: []byte("png")}
	q2, err := s.EnqueueMessage(ctx, Queued{Session: sess.ID, Text: "look", Parts: []llm.Part{&llm.Text{Text: "look"}, img}})
	if err != nil {
		t.Fatal(err)
	}
	if pending, _ := s.QueuedMessages(ctx, sess.ID); len(pending) != 1 || len(pending[0].Parts) != 2 {
		t.Fatalf("pending %+v", pending)
	}
	if ids, err := s.AppendWith(ctx, sess.ID, AppendOptions{DeliverQueued: true, Delivered: &got}); err != nil || len(ids) != 0 || len(got) != 1 {
		t.Fatalf("queue-only delivery: %v %v %v", ids, got, err)
	}
	path, _ = s.Path(ctx, sess.ID)
	last := path[len(path)-1]
	if last.ID != q2.MessageID || len(last.Message.Parts) != 2 {
		t.Errorf("the queued message with its image: %+v", last)
	}
	if ws, _ := s.SessionsWithQueue(ctx); len(ws) != 0 {
		t.Errorf("sessions with a queue after delivery: %v", ws)
	}
}

// TestLockSession: one holder at a time; the second says who holds it,
// or waits; a holder that goes away frees it.
func TestLockSession(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a, err := s.LockSession(ctx, "s1", "den run", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockSession(ctx, "s1", "den chat", false); !errors.Is(err, ErrSessionBusy) || !strings.Contains(err.Error(), "den run") {
		t.Errorf("second holder: %v", err)
	}
	if b, err := s.LockSession(ctx, "s2", "x", false); err != nil {
		t.Errorf("another session: %v", err)
	} else {
		b.Unlock()
	}
	done := make(chan error, 1)
	go func() {
		l, err := s.LockSession(ctx, "s1", "waiter", true)
		l.Unlock()
		done <- err
	}()
	a.Unlock()
	if err := <-done; err != nil {
		t.Errorf("waiting: %v", err)
	}
	if _, err := s.LockSession(ctx, "../x", "x", false); err == nil {
		t.Error("a bad id was accepted")
	}
}
