package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"modernc.org/sqlite"
)

func TestOpenCreatesPrivateFileAndFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data dir", "with?odd#chars")
	path := filepath.Join(dir, "den.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	newSession(t, s, "a") // a write, so the WAL exists
	for name, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s: mode %v, want at most %v", name, got, want)
		}
	}
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "2", "busy_timeout": "10000"} {
		var got string
		if err := s.db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestMigrateEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "den.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second open finds the schema current
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "PRAGMA user_version"); n != len(migrations) {
			t.Errorf("user_version %d, want %d", n, len(migrations))
		}
		checkIntegrity(t, s.db)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenConcurrentMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "den.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := Open(path)
			if err == nil {
				_, err = s.CreateSession(context.Background(), "a", "m")
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "den.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	c, err := sqlite.NewConnector(path)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open: %v, want ErrSchemaTooNew", err)
	}
	t.Log(err)
}

func TestSessions(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if err := s.EnsureAgent(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureAgent(ctx, "ada"); err != nil {
		t.Fatalf("second EnsureAgent: %v", err)
	}
	if err := s.EnsureAgent(ctx, ""); err == nil {
		t.Error("EnsureAgent(\"\"): no error")
	}

	s1 := newSession(t, s, "ada") // creates nothing new for ada
	if err := s.SetTitle(ctx, s1.ID, "First"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetModel(ctx, s1.ID, "openai/gpt-test"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "First" || got.Model != "openai/gpt-test" || got.Agent != "ada" || got.Head != "" {
		t.Errorf("GetSession = %+v", got)
	}
	if !got.Updated.After(s1.Updated) || !got.Created.Equal(s1.Created) {
		t.Errorf("times: created %v → %v, updated %v → %v", s1.Created, got.Created, s1.Updated, got.Updated)
	}

	for _, err := range []error{
		func() error { _, err := s.GetSession(ctx, "nope"); return err }(),
		s.SetTitle(ctx, "nope", "x"),
		s.SetModel(ctx, "nope", "x"),
		s.DeleteSession(ctx, "nope"),
		func() error { _, err := s.LatestSession(ctx, "nobody"); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	}
}

func TestLatestAndListSessions(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	s1 := newSession(t, s, "ada")
	s2 := newSession(t, s, "ada")
	other := newSession(t, s, "bob")

	latest := func(want Session) {
		t.Helper()
		got, err := s.LatestSession(ctx, "ada")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID {
			t.Errorf("LatestSession = %s, want %s", got.ID, want.ID)
		}
	}
	latest(s2)
	mustAppend(t, s, s1.ID, user("back to the first"))
	latest(s1)
	mustAppend(t, s, other.ID, user("bob's turn"))
	latest(s1)

	ids := func(list []Session) []string {
		var ids []string
		for _, x := range list {
			ids = append(ids, x.ID)
		}
		return ids
	}
	list, err := s.ListSessions(ctx, "ada", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{s1.ID, s2.ID}, ids(list)); diff != "" {
		t.Errorf("ListSessions(ada) (-want +got):\n%s", diff)
	}
	list, err = s.ListSessions(ctx, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{other.ID, s1.ID}, ids(list)); diff != "" {
		t.Errorf("ListSessions(\"\", 2) (-want +got):\n%s", diff)
	}
}

func TestDeleteSessionCascades(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	gone := newSession(t, s, "ada")
	kept := newSession(t, s, "ada")
	for _, sess := range []Session{gone, kept} {
		mustAppend(t, s, sess.ID, user("hi"))
		mustAppend(t, s, sess.ID, turn("t1", 2)...)
		ids := mustAppend(t, s, sess.ID, turn("t2", 1)...)
		// A second branch, so the cascade goes through a tree.
		if err := s.SetHead(ctx, sess.ID, ids[0]); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, sess.ID, user("other branch"))
		if err := s.RecordUsage(ctx, UsageRecord{Session: sess.ID, Model: "m", Purpose: PurposeConversation, InputTokens: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, gone.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession after delete: %v", err)
	}
	if _, err := s.History(ctx, gone.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("History after delete: %v", err)
	}
	for table, col := range map[string]string{"messages": "session_id", "tool_calls": "session_id"} {
		if n := count(t, s, `SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, gone.ID); n != 0 {
			t.Errorf("%d rows of %s left", n, table)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM messages WHERE session_id = ?`, kept.ID); n != 6 {
		t.Errorf("the kept session has %d messages, want 6", n)
	}
	if n := count(t, s, `SELECT count(*) FROM tool_calls WHERE session_id = ?`, kept.ID); n != 3 {
		t.Errorf("the kept session has %d tool calls, want 3", n)
	}
	// Usage records outlive their session, detached.
	if n := count(t, s, `SELECT count(*) FROM usage WHERE session_id IS NULL`); n != 1 {
		t.Errorf("%d detached usage records, want 1", n)
	}
	checkIntegrity(t, s.db)
}

func TestUsage(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a1 := newSession(t, s, "ada")
	a2 := newSession(t, s, "ada")
	b1 := newSession(t, s, "bob")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	records := []UsageRecord{
		{Session: a1.ID, Model: "m1", Purpose: PurposeConversation, InputTokens: 100, OutputTokens: 20,
			CacheReadTokens: 1000, CacheWriteTokens: 50, CostUSD: 0.1, Latency: 1500 * time.Millisecond, Time: t0},
		{Session: a1.ID, Model: "m1", Purpose: PurposeCompaction, InputTokens: 2000, OutputTokens: 300,
			CostUSD: 0.2, Latency: time.Second, Time: t0.Add(time.Hour)},
		{Session: a2.ID, Model: "m2", Purpose: PurposeConversation, InputTokens: 1, OutputTokens: 2,
			CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 0.000001, Time: t0.Add(2 * time.Hour)},
		{Session: b1.ID, Model: "m1", Purpose: PurposeConversation, InputTokens: 7, CostUSD: 5, Time: t0},
	}
	for _, r := range records {
		if err := s.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SessionUsage(ctx, a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{Requests: 2, InputTokens: 2100, OutputTokens: 320, CacheReadTokens: 1000, CacheWriteTokens: 50, CostUSD: 0.3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SessionUsage(a1) (-want +got):\n%s", diff)
	}
	agentWant := Usage{Requests: 3, InputTokens: 2101, OutputTokens: 322, CacheReadTokens: 1003, CacheWriteTokens: 54, CostUSD: 0.300001}
	got, err = s.AgentUsage(ctx, "ada", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agentWant, got); diff != "" {
		t.Errorf("AgentUsage(ada) (-want +got):\n%s", diff)
	}
	got, err = s.AgentUsage(ctx, "ada", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Requests != 2 || got.InputTokens != 2001 {
		t.Errorf("AgentUsage(ada, since +1h) = %+v", got)
	}

	// The invariant: session totals are the sums of their records.
	if n := count(t, s, `SELECT count(*) FROM sessions s WHERE input_tokens + output_tokens + cache_read_tokens
		+ cache_write_tokens + cost_micro_usd + requests <> (SELECT coalesce(sum(input_tokens + output_tokens
		+ cache_read_tokens + cache_write_tokens + cost_micro_usd + 1), 0) FROM usage u WHERE u.session_id = s.id)`); n != 0 {
		t.Errorf("%d sessions whose totals differ from their records", n)
	}

	// Deleting a session keeps the agent's spend.
	if err := s.DeleteSession(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	got, err = s.AgentUsage(ctx, "ada", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agentWant, got); diff != "" {
		t.Errorf("AgentUsage(ada) after delete (-want +got):\n%s", diff)
	}

	for _, r := range []UsageRecord{
		{Session: "nope", Model: "m", Purpose: PurposeConversation},
		{Session: a2.ID, Model: "m"},
		{Session: a2.ID, Model: "m", Purpose: PurposeConversation, InputTokens: -1},
		{Session: a2.ID, Model: "m", Purpose: PurposeConversation, CostUSD: -0.5},
	} {
		if err := s.RecordUsage(ctx, r); err == nil {
			t.Errorf("RecordUsage(%+v): no error", r)
		}
	}
	if got, _ := s.SessionUsage(ctx, a2.ID); got.Requests != 1 {
		t.Errorf("rejected records counted: %+v", got)
	}
}
