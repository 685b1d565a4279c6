package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestSubagentSessions: a sub-agent session knows its parent and
// profile, lists under it, and its usage (and its own sub-agents')
// sums into the parent's descendants' usage, not the parent's own.
func TestSubagentSessions(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	parent := newSession(t, s, "ada")
	if _, err := s.CreateChild(ctx, "nope", "ada", "m", "", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("a child of a missing session: %v, want ErrNotFound", err)
	}
	a, err := s.CreateChild(ctx, parent.ID, "ada", "anthropic/x", "researcher", false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateChild(ctx, parent.ID, "bob", "anthropic/y", "", false)
	if err != nil {
		t.Fatal(err)
	}
	grand, err := s.CreateChild(ctx, a.ID, "ada", "anthropic/x", "", false)
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

// TestSubagentAnswers: a reporting sub-agent's answer is owed from its
// spawn; it is delivered (queued for the parent) once, in the
// transaction that records it; an answer for a run that is not the
// last one is not delivered; a run den died during becomes
// interrupted as its word is delivered; a new round (a steer) owes an
// answer again; settling, and turning the report off, owe nothing.
func TestSubagentAnswers(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	parent := newSession(t, s, "ada")
	a, err := s.CreateChild(ctx, parent.ID, "ada", "m", "", true)
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := s.CreateChild(ctx, parent.ID, "ada", "m", "", false)
	if err != nil {
		t.Fatal(err)
	}
	owed := func(want ...string) {
		t.Helper()
		list, err := s.OwedSubagents(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range list {
			got = append(got, st.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("owed %v, want %v", got, want)
		}
	}
	owed(a.ID)
	if st, err := s.SubagentState(ctx, quiet.ID); err != nil || st.Reports || st.Owed || st.Parent != parent.ID {
		t.Errorf("a sub-agent that does not report: %+v %v", st, err)
	}
	if err := s.SetEnded(ctx, a.ID, EndedRunning, ""); err != nil {
		t.Fatal(err)
	}
	msg := Queued{Session: parent.ID, FromSession: a.ID, Text: "Sub-agent finished."}
	// An answer for a run that ended otherwise than the store says is
	// not the last run's.
	if _, ok, err := s.DeliverAnswer(ctx, Answer{Subagent: a.ID, Run: EndedDone, Message: msg}); err != nil || ok {
		t.Errorf("delivered for another run: %v %v", ok, err)
	}
	if err := s.SetEnded(ctx, a.ID, EndedDone, ""); err != nil {
		t.Fatal(err)
	}
	q, ok, err := s.DeliverAnswer(ctx, Answer{Subagent: a.ID, Run: EndedDone, Message: msg})
	if err != nil || !ok || q.MessageID == "" {
		t.Fatalf("deliver: %+v %v %v", q, ok, err)
	}
	if _, ok, err := s.DeliverAnswer(ctx, Answer{Subagent: a.ID, Run: EndedDone, Message: msg}); err != nil || ok {
		t.Errorf("delivered twice: %v %v", ok, err)
	}
	if list, _ := s.QueuedMessages(ctx, parent.ID); len(list) != 1 || list[0].FromSession != a.ID {
		t.Errorf("the parent's queue %+v, want the one answer", list)
	}
	st, err := s.SubagentState(ctx, a.ID)
	if err != nil || st.Owed || st.Delivered.IsZero() || st.Ended != EndedDone {
		t.Errorf("after delivery %+v %v", st, err)
	}
	owed()

	// Steered: owed again; den dies during the run; its word is
	// delivered as interrupted.
	if err := s.OweAnswer(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.SubagentState(ctx, a.ID); !st.Owed || st.Ended != EndedNone || !st.Delivered.IsZero() {
		t.Errorf("a new round %+v", st)
	}
	s.SetEnded(ctx, a.ID, EndedRunning, "")
	// Steered again as it runs: the round joins the run.
	s.OweAnswer(ctx, a.ID)
	if st, _ := s.SubagentState(ctx, a.ID); !st.Owed || st.Ended != EndedRunning {
		t.Errorf("a round joining a run %+v", st)
	}
	if _, ok, err := s.DeliverAnswer(ctx, Answer{Subagent: a.ID, Run: EndedRunning, Ended: EndedInterrupted, Error: "den stopped", Message: msg}); err != nil || !ok {
		t.Fatalf("deliver the interruption: %v %v", ok, err)
	}
	if st, _ := s.SubagentState(ctx, a.ID); st.Owed || st.Ended != EndedInterrupted || st.Error != "den stopped" {
		t.Errorf("after the interruption %+v", st)
	}

	// Settled: owed no more, unless a new round began meanwhile.
	s.OweAnswer(ctx, a.ID)
	s.SetEnded(ctx, a.ID, EndedDone, "")
	s.OweAnswer(ctx, a.ID)
	if ok, err := s.SettleAnswer(ctx, a.ID, EndedDone); err != nil || ok {
		t.Errorf("settled a new round: %v %v", ok, err)
	}
	s.SetEnded(ctx, a.ID, EndedError, "boom")
	if ok, err := s.SettleAnswer(ctx, a.ID, EndedError); err != nil || !ok {
		t.Errorf("settle: %v %v", ok, err)
	}
	owed()

	// Reporting turned on owes the last answer; off, nothing.
	if err := s.SetReport(ctx, quiet.ID, true); err != nil {
		t.Fatal(err)
	}
	owed(quiet.ID)
	if err := s.SetReport(ctx, quiet.ID, false); err != nil {
		t.Fatal(err)
	}
	s.OweAnswer(ctx, quiet.ID)
	owed()
	if err := s.SetReport(ctx, "nope", true); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetReport of no session: %v", err)
	}
	// A message for another session than the parent is refused.
	s.SetReport(ctx, quiet.ID, true)
	s.SetEnded(ctx, quiet.ID, EndedDone, "")
	if _, _, err := s.DeliverAnswer(ctx, Answer{Subagent: quiet.ID, Run: EndedDone, Message: Queued{Session: quiet.ID, Text: "x"}}); err == nil {
		t.Error("delivered to a session that is not the parent")
	}
	if list, _ := s.OwedSubagents(ctx, parent.ID); len(list) != 1 || list[0].ID != quiet.ID {
		t.Errorf("owed to the parent %+v", list)
	}
}
