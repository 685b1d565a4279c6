package store

import (
	"context"
	"errors"
	"testing"
)

// TestSubagentSessions: a sub-agent session knows its parent and
// profile, lists under it, and its usage (and its own sub-agents')
// sums into the parent's descendants' usage, not the parent's own.
func TestSubagentSessions(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	parent := newSession(t, s, "ada")
	if _, err := s.CreateChild(ctx, "nope", "ada", "m", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("a child of a missing session: %v, want ErrNotFound", err)
	}
	a, err := s.CreateChild(ctx, parent.ID, "ada", "anthropic/x", "researcher")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateChild(ctx, parent.ID, "bob", "anthropic/y", "")
	if err != nil {
		t.Fatal(err)
	}
	grand, err := s.CreateChild(ctx, a.ID, "ada", "anthropic/x", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, a.ID)
	if err != nil || got.Parent != parent.ID || got.Profile != "researcher" || got.Agent != "ada" {
		t.Errorf("child %+v %v", got, err)
	}
	kids, err := s.Subagents(ctx, parent.ID)
	if err != nil || len(kids) != 2 || kids[0].ID != a.ID || kids[1].ID != b.ID || kids[1].Agent != "bob" {
		t.Errorf("children %+v %v", kids, err)
	}
	for _, r := range []UsageRecord{
		{Session: parent.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 1, CostUSD: 1},
		{Session: a.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 10, CostUSD: 0.25},
		{Session: b.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 100, CostUSD: 0.5},
		{Session: grand.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 1000, CostUSD: 0.125},
	} {
		if err := s.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	u, err := s.DescendantUsage(ctx, parent.ID)
	if err != nil || u.InputTokens != 1110 || u.CostUSD != 0.875 || u.Requests != 3 {
		t.Errorf("descendants' usage %+v %v, want 1110 tokens, $0.875 in 3 requests", u, err)
	}
	if u, err := s.DescendantUsage(ctx, b.ID); err != nil || u.Requests != 0 {
		t.Errorf("a leaf's descendants' usage %+v %v", u, err)
	}
}

// TestInbox: an agent has one inbox, made at the first message and made
// again when it was deleted; a message queued there says which agent
// and session sent it.
func TestInbox(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	in, created, err := s.Inbox(ctx, "bob", "anthropic/x")
	if err != nil || !created || in.Agent != "bob" || in.Title != "Inbox" {
		t.Fatalf("first inbox %+v %v %v", in, created, err)
	}
	again, created, err := s.Inbox(ctx, "bob", "anthropic/x")
	if err != nil || created || again.ID != in.ID {
		t.Errorf("second inbox %+v %v %v, want %s", again, created, err, in.ID)
	}
	_, err = s.EnqueueMessage(ctx, Queued{Session: in.ID, FromSession: "S1", FromAgent: "ada", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.QueuedMessages(ctx, in.ID)
	if err != nil || len(list) != 1 || list[0].FromAgent != "ada" || QueuedText(list[0]) != "[message from agent ada, session S1]\nhello" {
		t.Errorf("queued %+v %v", list, err)
	}
	if n, err := s.DropQueued(ctx, in.ID); err != nil || n != 1 {
		t.Errorf("DropQueued: %d %v", n, err)
	}
	if err := s.DeleteSession(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	third, created, err := s.Inbox(ctx, "bob", "anthropic/x")
	if err != nil || !created || third.ID == in.ID {
		t.Errorf("inbox after deleting it: %+v %v %v", third, created, err)
	}
}
