package store

import (
	"context"
	"path/filepath"
	"testing"

	"den.dev/den/internal/llm"
)

func TestSummaries(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, err := s.CreateSession(ctx, "a", "m/x")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.Append(ctx, sess.ID, llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "q"}}}, llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddSummary(ctx, sess.ID, Summary{UpToMessageID: ids[1], Text: "they talked", Compacted: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSummary(ctx, sess.ID, Summary{UpToMessageID: "nosuch", Text: "x"}); err == nil {
		t.Error("a summary anchored to no message was accepted")
	}
	got, err := s.Summaries(ctx, sess.ID)
	if err != nil || len(got) != 1 || got[0].Text != "they talked" || got[0].UpToMessageID != ids[1] {
		t.Fatalf("summaries %+v %v", got, err)
	}
	// History is untouched.
	if h, _ := s.History(ctx, sess.ID); len(h) != 2 {
		t.Errorf("history %d", len(h))
	}
	if err := s.DeleteSummary(ctx, sess.ID, got[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Summaries(ctx, sess.ID); len(got) != 0 {
		t.Errorf("after delete: %+v", got)
	}
}
