package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAppendIsAtomic(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	sess := newSession(t, s, "a")
	first := mustAppend(t, s, sess.ID, user("hi"))
	before, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}

	// The second message breaks the roles CHECK constraint, after the
	// first message and its tool call were inserted.
	tr := turn("t", 1)
	batch := []llm.Message{tr[0], {Role: "system", Parts: []llm.Part{&llm.Text{Text: "not a role"}}}, tr[1]}
	ids, err := s.Append(ctx, sess.ID, batch...)
	if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
		t.Fatalf("Append = %v, %v; want a CHECK constraint error", ids, err)
	}
	t.Log(err)

	after, err := s.GetSession(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the session changed (-before +after):\n%s", diff)
	}
	if n := count(t, s, `SELECT count(*) FROM messages`); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
	if n := count(t, s, `SELECT count(*) FROM tool_calls`); n != 0 {
		t.Errorf("%d tool calls indexed, want 0", n)
	}
	if after.Head != first[0] {
		t.Errorf("head %s, want %s", after.Head, first[0])
	}

	if _, err := s.Append(ctx, "nope", user("x")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Append to a missing session: %v, want ErrNotFound", err)
	}
}

func TestVersionTree(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	sess := newSession(t, s, "a")
	history := func(want ...llm.Message) {
		t.Helper()
		got, err := s.History(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("History (-want +got):\n%s", diff)
		}
	}
	history()

	u1, a1 := user("question"), assistant("answer 1")
	ids := mustAppend(t, s, sess.ID, u1, a1)
	u1ID, a1ID := ids[0], ids[1]
	history(u1, a1)

	// Regenerate: a new child of the user message; the old one stays.
	if err := s.SetHead(ctx, sess.ID, u1ID); err != nil {
		t.Fatal(err)
	}
	history(u1)
	a2 := assistant("answer 2")
	a2ID := mustAppend(t, s, sess.ID, a2)[0]
	history(u1, a2)
	u2 := user("follow-up")
	mustAppend(t, s, sess.ID, u2)
	history(u1, a2, u2)

	children, err := s.Children(ctx, u1ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range children {
		got = append(got, c.ID)
		if c.ParentID != u1ID || c.Session != sess.ID || c.Model != sess.Model {
			t.Errorf("child %+v", c)
		}
	}
	if diff := cmp.Diff([]string{a1ID, a2ID}, got); diff != "" {
		t.Errorf("Children (-want +got):\n%s", diff)
	}

	// Back to the old branch.
	if err := s.SetHead(ctx, sess.ID, a1ID); err != nil {
		t.Fatal(err)
	}
	history(u1, a1)

	// Edit the first message: a new root.
	if err := s.SetHead(ctx, sess.ID, ""); err != nil {
		t.Fatal(err)
	}
	history()
	u1b := user("question, edited")
	u1bID := mustAppend(t, s, sess.ID, u1b)[0]
	history(u1b)
	roots, err := s.Roots(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) != 2 || roots[0].ID != u1ID || roots[1].ID != u1bID || roots[1].ParentID != "" {
		t.Errorf("Roots = %+v", roots)
	}

	path, err := s.Path(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(path) != 1 || path[0].ID != u1bID || path[0].Model != "" {
		t.Errorf("Path = %+v", path)
	}

	// Heads stay inside their session.
	other := newSession(t, s, "a")
	if err := s.SetHead(ctx, other.ID, a1ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetHead to another session's message: %v", err)
	}
	if err := s.SetHead(ctx, sess.ID, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetHead to a missing message: %v", err)
	}
	if _, err := s.Children(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Children of a missing message: %v", err)
	}
	checkIntegrity(t, s.db)
}

func TestAppendModel(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	sess := newSession(t, s, "a")
	if _, err := s.AppendWith(ctx, sess.ID, AppendOptions{Model: "fallback/model"}, user("q"), assistant("a")); err != nil {
		t.Fatal(err)
	}
	path, err := s.Path(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if path[0].Model != "" || path[1].Model != "fallback/model" {
		t.Errorf("models %q, %q", path[0].Model, path[1].Model)
	}
}

// TestConcurrentAppendsKeepOneChain appends to one session from several
// goroutines: each Append must extend the head it finds under the lock,
// so the result is one chain holding every batch whole.
func TestConcurrentAppendsKeepOneChain(t *testing.T) {
	s := openTemp(t)
	sess := newSession(t, s, "a")
	const workers, batches = 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*batches)
	for w := range workers {
		wg.Go(func() {
			for b := range batches {
				label := fmt.Sprintf("w%d-b%d", w, b)
				if _, err := s.Append(context.Background(), sess.ID, turn(label, 1)...); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	path, err := s.Path(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(path) != workers*batches*2 {
		t.Fatalf("path of %d messages, want %d", len(path), workers*batches*2)
	}
	for i := 0; i < len(path); i += 2 {
		label := path[i].Message.Parts[0].(*llm.Text).Text
		result := path[i+1].Message.Parts[0].(*llm.ToolResult)
		if result.CallID != label+"-call-0" {
			t.Errorf("message %d answers %s, want a call of %s", i+1, result.CallID, label)
		}
	}
}

func TestToolCallIndex(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	sess := newSession(t, s, "a")
	mustAppend(t, s, sess.ID, user("look"))
	call := llm.Message{Role: llm.Assistant, Parts: []llm.Part{
		&llm.Thinking{Text: "hmm"},
		&llm.ToolCall{ID: "c1", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`)},
		&llm.ToolCall{ID: "c2", Name: "screenshot", Input: json.RawMessage(`{"x":`)},
		&llm.ToolCall{ID: "c3", Name: "slow"},
	}}
	// The calls and their results arrive in separate Appends (as when a
	// crashed turn's results are repaired), results answering the
	// assistant message above them.
	callID := mustAppend(t, s, sess.ID, call)[0]
	results := llm.Message{Role: llm.User, Parts: []llm.Part{
		&llm.ToolResult{CallID: "c1", Name: "shell", Content: []llm.Part{&llm.Text{Text: "a"}, &llm.Text{Text: "b"}}},
		&llm.ToolResult{CallID: "c2", Name: "screenshot", IsError: true, Content: []llm.Part{
			&llm.Text{Text: "bad input"}, &llm.Image{MediaType: "image/png", Data: []byte{1}}}},
		&llm.ToolResult{CallID: "unknown", Name: "x"},
	}}
	ids, err := s.AppendWith(ctx, sess.ID, AppendOptions{ToolDurations: map[string]time.Duration{"c1": 1500 * time.Millisecond}}, results)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := s.ToolCalls(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{Session: sess.ID, MessageID: callID, Position: 1, CallID: "c1", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`),
			ResultMessageID: ids[0], Result: "a\nb", Duration: 1500 * time.Millisecond},
		{Session: sess.ID, MessageID: callID, Position: 2, CallID: "c2", Name: "screenshot", Input: json.RawMessage(`{"x":`),
			ResultMessageID: ids[0], Result: "bad input", ResultImages: 1, IsError: true},
		{Session: sess.ID, MessageID: callID, Position: 3, CallID: "c3", Name: "slow", Input: json.RawMessage{}},
	}
	if diff := cmp.Diff(want, calls, cmpopts.IgnoreFields(ToolCall{}, "Created")); diff != "" {
		t.Errorf("ToolCalls (-want +got):\n%s", diff)
	}

	// A whole turn in one Append is indexed the same way.
	mustAppend(t, s, sess.ID, turn("t", 3)...)
	calls, err = s.ToolCalls(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 6 {
		t.Fatalf("%d calls, want 6", len(calls))
	}
	for _, c := range calls[3:] {
		if c.ResultMessageID == "" || !strings.HasPrefix(c.CallID, "t-call-") {
			t.Errorf("call %+v", c)
		}
	}
}

// TestTwoHandlesConcurrently is two den processes (here two Stores) on
// one file, each appending from two goroutines to its own sessions. The
// write lock is contended all the time; the busy timeout must absorb
// it.
func TestTwoHandlesConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "den.db")
	var stores [2]*Store
	for i := range stores {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	const perStore, batches = 2, 25
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*perStore*batches)
	sessions := make(chan string, len(stores)*perStore)
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				ctx := context.Background()
				sess, err := s.CreateSession(ctx, "shared", "m")
				if err != nil {
					errs <- err
					return
				}
				sessions <- sess.ID
				for b := range batches {
					if _, err := s.Append(ctx, sess.ID, turn(fmt.Sprint(b), 3)...); err != nil {
						errs <- err
					}
					if _, err := s.History(ctx, sess.ID); err != nil {
						errs <- err
					}
					if err := s.RecordUsage(ctx, UsageRecord{Session: sess.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 1}); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	close(sessions)
	for err := range errs {
		t.Error(err)
	}
	for id := range sessions {
		h, err := stores[0].History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2*batches {
			t.Errorf("session %s: %d messages, want %d", id, len(h), 2*batches)
		}
	}
	u, err := stores[1].AgentUsage(context.Background(), "shared", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if u.Requests != int64(len(stores)*perStore*batches) {
		t.Errorf("%d requests recorded, want %d", u.Requests, len(stores)*perStore*batches)
	}
	checkIntegrity(t, stores[0].db)
}
