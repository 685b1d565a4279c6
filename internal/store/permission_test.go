package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newApproval(t *testing.T, s *Store, agent, session, command, action string, ttl time.Duration) Approval {
	t.Helper()
	a, err := s.CreateApproval(context.Background(), Approval{
		Agent: agent, Session: session, Command: command, Action: action,
		Args: []string{action, "x"}, Expires: time.Now().Add(ttl),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestApprovalLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := newApproval(t, s, "a", "s1", "den-config", "set", time.Hour)
	if a.ID == "" || a.Status != ApprovalPending {
		t.Fatalf("created %+v", a)
	}
	got, err := s.GetApproval(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("GetApproval (-created +got):\n%s", diff)
	}
	pending, err := s.PendingApprovals(ctx, "a")
	if err != nil || len(pending) != 1 || pending[0].ID != a.ID {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if other, _ := s.PendingApprovals(ctx, "b"); len(other) != 0 {
		t.Errorf("agent b sees %+v", other)
	}

	ans, err := s.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: ApprovalApproved, Scope: ScopeSession, DecidedBy: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != ApprovalApproved || ans.Scope != ScopeSession || ans.DecidedBy != "user" || ans.Decided.IsZero() {
		t.Errorf("answered %+v", ans)
	}
	if pending, _ := s.PendingApprovals(ctx, ""); len(pending) != 0 {
		t.Errorf("still pending: %+v", pending)
	}
	// The first answer stands.
	again, err := s.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: ApprovalDenied, Scope: ScopeOnce, DecidedBy: "user"})
	if !errors.Is(err, ErrAnswered) || again.Status != ApprovalApproved {
		t.Errorf("second answer: %+v, %v; want ErrAnswered and the approved row", again, err)
	}
	if _, err := s.AnswerApproval(ctx, "nosuch", ApprovalAnswer{Status: ApprovalApproved, Scope: ScopeOnce, DecidedBy: "user"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.GetApproval(ctx, "nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetApproval unknown id: %v, want ErrNotFound", err)
	}

	sa, ok, err := s.SessionAnswer(ctx, "a", "s1", "den-config", "set", "")
	if err != nil || !ok || sa.ID != a.ID {
		t.Errorf("SessionAnswer %+v %v %v", sa, ok, err)
	}
	if _, ok, _ := s.SessionAnswer(ctx, "a", "s2", "den-config", "set", ""); ok {
		t.Error("a session answer leaked into another session")
	}
}

func TestAnswerApprovalRejectsBadAnswers(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := newApproval(t, s, "a", "s", "den-open", "", time.Hour)
	for _, ans := range []ApprovalAnswer{
		{Status: ApprovalApproved, Scope: "forever", DecidedBy: "user"},
		{Status: ApprovalApproved, Scope: ScopeOnce},
		{Status: "maybe", Scope: ScopeOnce, DecidedBy: "user"},
		{Status: ApprovalExpired, Scope: ScopeOnce, DecidedBy: "timeout"},
		{Status: ApprovalPending, DecidedBy: "user"},
	} {
		if _, err := s.AnswerApproval(ctx, a.ID, ans); err == nil {
			t.Errorf("answer %+v accepted", ans)
		}
	}
	if got, _ := s.GetApproval(ctx, a.ID); got.Status != ApprovalPending {
		t.Errorf("after bad answers: %+v", got)
	}
}

func TestAnswerApprovalAfterDeadline(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := newApproval(t, s, "a", "s", "den-open", "", -time.Second)
	if pending, _ := s.PendingApprovals(ctx, ""); len(pending) != 0 {
		t.Errorf("an expired approval is listed as pending: %+v", pending)
	}
	got, err := s.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: ApprovalApproved, Scope: ScopeOnce, DecidedBy: "user"})
	if !errors.Is(err, ErrExpired) || got.Status != ApprovalExpired {
		t.Fatalf("late answer: %+v, %v; want ErrExpired", got, err)
	}
	if got, _ := s.GetApproval(ctx, a.ID); got.Status != ApprovalExpired || got.DecidedBy != "timeout" {
		t.Errorf("stored %+v", got)
	}
}

func TestAnswerAlwaysWritesRule(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a := newApproval(t, s, "a", "s", "den-sessions", "send", time.Hour)
	if _, err := s.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: ApprovalApproved, Scope: ScopeAlways, DecidedBy: "user"}); err != nil {
		t.Fatal(err)
	}
	b := newApproval(t, s, "a", "s", "den-config", "set", time.Hour)
	if _, err := s.AnswerApproval(ctx, b.ID, ApprovalAnswer{Status: ApprovalDenied, Scope: ScopeAlways, DecidedBy: "user"}); err != nil {
		t.Fatal(err)
	}
	rules, err := s.Rules(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rules {
		got[r.Command+" "+r.Action] = r.Decision
	}
	want := map[string]string{"den-sessions send": "allow", "den-config set": "deny"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

func TestRules(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, r := range []Rule{
		{Agent: "a", Command: "den-open", Decision: "ask"},
		{Agent: "a", Command: "den-open", Decision: "allow"}, // replaces
		{Agent: "a", Command: "den-model", Action: "run", Decision: "deny"},
		{Agent: "b", Command: "den-open", Decision: "deny"},
	} {
		if err := s.AddRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddRule(ctx, Rule{Agent: "a", Command: "den-open", Decision: "perhaps"}); err == nil {
		t.Error("a rule with decision perhaps was accepted")
	}
	rules, err := s.Rules(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Agent+"|"+r.Command+"|"+r.Action+"|"+r.Decision)
	}
	want := []string{"a|den-model|run|deny", "a|den-open||allow"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if all, _ := s.Rules(ctx, ""); len(all) != 3 {
		t.Errorf("all rules: %+v", all)
	}
	if ok, err := s.DeleteRule(ctx, "a", "den-open", "", nil); !ok || err != nil {
		t.Errorf("DeleteRule: %v %v", ok, err)
	}
	if ok, _ := s.DeleteRule(ctx, "a", "den-open", "", nil); ok {
		t.Error("DeleteRule found the rule twice")
	}
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	entries := []AuditEntry{
		{Agent: "a", Session: "s1", Command: "den-open", Args: []string{"https://x"}, Decision: "allow", DecidedBy: "policy", ExitCode: 0, Duration: 1500 * time.Microsecond},
		{Agent: "a", Session: "s2", Command: "den-config", Action: "set", Args: []string{"set", "k", "v"}, Decision: "deny", DecidedBy: "user", ApprovalID: "ap1", ExitCode: 3, Waited: 2 * time.Second},
		{Agent: "b", Session: "s3", Command: "den-notify", Decision: "allow", DecidedBy: "policy"},
	}
	for _, e := range entries {
		if _, err := s.AddAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddAudit(ctx, AuditEntry{Agent: "a", Command: "x", Decision: "ask"}); err == nil {
		t.Error("an audit entry with decision ask was accepted")
	}
	all, err := s.ListAudit(ctx, AuditFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Command != "den-notify" {
		t.Fatalf("all: %+v", all)
	}
	if all[0].Args == nil || len(all[0].Args) != 0 {
		t.Errorf("nil args read back as %#v, want empty", all[0].Args)
	}
	got, err := s.ListAudit(ctx, AuditFilter{Agent: "a"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".ID" || n == ".Time"
	}, cmp.Ignore())
	if diff := cmp.Diff([]AuditEntry{entries[1], entries[0]}, got, ignore); diff != "" {
		t.Errorf("agent a (-want +got):\n%s", diff)
	}
	if got, _ := s.ListAudit(ctx, AuditFilter{Session: "s2"}, 10); len(got) != 1 || got[0].ApprovalID != "ap1" {
		t.Errorf("session s2: %+v", got)
	}
	if got, _ := s.ListAudit(ctx, AuditFilter{}, 1); len(got) != 1 {
		t.Errorf("limit 1: %d entries", len(got))
	}
	if got, _ := s.ListAudit(ctx, AuditFilter{Since: time.Now().Add(time.Hour)}, 0); len(got) != 0 {
		t.Errorf("since the future: %+v", got)
	}
}

// TestAnswerRace answers one approval from several Stores on the same
// file at once: exactly one answer wins.
func TestAnswerRace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "den.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := newApproval(t, s, "a", "s", "den-open", "", time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 6 {
		wg.Go(func() {
			o, err := Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer o.Close()
			status := ApprovalApproved
			if i%2 == 1 {
				status = ApprovalDenied
			}
			_, err = o.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: status, Scope: ScopeOnce, DecidedBy: "user"})
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.Is(err, ErrAnswered):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d answers won, want 1", wins)
	}
}

// TestAnswersBoundToSubject: a session answer and a rule cover the
// subject they were given for, not the command's other subjects.
func TestAnswersBoundToSubject(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, c := range []struct{ subject, scope string }{{"agents.a.model", ScopeSession}, {"openai/gpt-5-mini", ScopeAlways}} {
		a, err := s.CreateApproval(ctx, Approval{Agent: "a", Session: "s1", Command: "den-x", Action: "y", Subject: c.subject,
			Detail: "the change", Args: []string{"y", c.subject}, Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AnswerApproval(ctx, a.ID, ApprovalAnswer{Status: ApprovalApproved, Scope: c.scope, DecidedBy: "user"}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetApproval(ctx, a.ID)
		if got.Subject != c.subject || got.Detail != "the change" {
			t.Errorf("stored %+v", got)
		}
	}
	if _, ok, _ := s.SessionAnswer(ctx, "a", "s1", "den-x", "y", "agents.a.model"); !ok {
		t.Error("no session answer for the subject approved")
	}
	if _, ok, _ := s.SessionAnswer(ctx, "a", "s1", "den-x", "y", "agents.a.trust"); ok {
		t.Error("a session answer for one subject answers another")
	}
	rules, _ := s.Rules(ctx, "a")
	if len(rules) != 1 || rules[0].Subject != "openai/gpt-5-mini" {
		t.Errorf("rules %+v", rules)
	}
	other := "anthropic/claude-opus-4-1"
	if ok, _ := s.DeleteRule(ctx, "a", "den-x", "y", &other); ok {
		t.Error("deleted a rule of another subject")
	}
	if ok, _ := s.DeleteRule(ctx, "a", "den-x", "y", nil); !ok {
		t.Error("rule not deleted")
	}
}

// TestMigrateRulesKeepsThem: rules stored before subjects existed stay,
// with no subject (they cover calls without one).
func TestMigrateRulesKeepsThem(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "den.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:3] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA user_version = 3; INSERT INTO rules (agent, command, action, decision, created_at) VALUES ('a', 'den-clipboard', 'read', 'allow', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rules, err := s2.Rules(ctx, "a")
	if err != nil || len(rules) != 1 || rules[0].Subject != "" || rules[0].Decision != "allow" {
		t.Errorf("after migration: %+v %v", rules, err)
	}
}
