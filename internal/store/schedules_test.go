package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestScheduleRows: a job, its runs and a delivery go in and come back
// as they were; a slot's row is inserted once (the claim), whoever
// tries; the wake is the earliest of the due job, the retry and the
// delivery; removing the job removes its rows.
func TestScheduleRows(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 7, 0, 0, 0, time.UTC)
	j := Schedule{Agent: "default", Name: "digest", Kind: "cron", Spec: "0 7 * * *", TZ: "Europe/Berlin", Prompt: "read",
		Session: "journal", Model: "anthropic/x", Budget: "0.50", MaxTurns: 5, Verify: "test -s out", Deliver: "notify", Speak: true,
		Approvals: "deny", Misfire: "run-once", Grace: 5 * time.Minute, Jitter: 30 * time.Second, Retries: 2, CreatedBy: "user",
		Created: at.Add(-time.Hour), Updated: at.Add(-time.Hour), Accounted: at.Add(-time.Hour), NextDue: at}
	first := &ScheduleRun{Slot: at, Attempt: 1, Due: at, Cause: "time", Status: "running", Started: at, Session: "s1", Owner: "a"}
	var d ScheduleDelivery
	err := s.UpdateSchedules(ctx, func(tx *ScheduleTx) error {
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		first.Schedule = j.ID
		if ok, err := tx.AddRun(first); err != nil || !ok {
			t.Fatalf("first claim: %v %v", ok, err)
		}
		again := *first
		again.ID, again.Owner = 0, "b"
		if ok, err := tx.AddRun(&again); err != nil || ok {
			t.Fatalf("second claim of one slot: %v %v", ok, err)
		}
		d = ScheduleDelivery{Schedule: j.ID, Kind: "result", Title: "digest", Body: "hello", Session: "s1", Status: "pending",
			NextAttempt: at.Add(3 * time.Minute), Created: at}
		if err := tx.AddDelivery(&d); err != nil {
			return err
		}
		first.Status, first.Ended, first.CostUSD, first.Delivery = "failed", at.Add(time.Minute), 0.123456, d.ID
		first.RetryAt = at.Add(2 * time.Minute)
		if err := tx.PutRun(*first); err != nil {
			return err
		}
		return tx.Event("schedule", map[string]any{"schedule_id": j.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSchedule(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(j, got); diff != "" {
		t.Errorf("schedule (-put +got):\n%s", diff)
	}
	runs, err := s.ScheduleRuns(ctx, RunQuery{Schedule: j.ID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	if diff := cmp.Diff(*first, runs[0]); diff != "" {
		t.Errorf("run (-put +got):\n%s", diff)
	}
	if wake, _ := s.ScheduleWake(ctx); !wake.Equal(at) {
		t.Errorf("wake %v, want the job's %v", wake, at)
	}
	s.UpdateSchedules(ctx, func(tx *ScheduleTx) error {
		j.Paused = true
		return tx.PutSchedule(&j)
	})
	if wake, _ := s.ScheduleWake(ctx); !wake.Equal(at.Add(2 * time.Minute)) {
		t.Errorf("wake %v, want the retry's", wake)
	}
	if evs, _ := s.Events(ctx, "", 0, 0); len(evs) != 1 || evs[0].Type != "schedule" || evs[0].Session != "" {
		t.Errorf("events %+v", evs)
	}
	if err := s.UpdateSchedules(ctx, func(tx *ScheduleTx) error { return tx.DeleteSchedule(j.ID) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetScheduleDelivery(ctx, d.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the delivery outlived its job: %v", err)
	}
	if runs, _ := s.ScheduleRuns(ctx, RunQuery{}); len(runs) != 0 {
		t.Errorf("runs outlived their job: %v", runs)
	}
}

// TestAddSlots: the alike rows of a catch-up come back as AddRuns would
// have stored them, each with its slot and its due time as far after it;
// a slot that has a row for the attempt keeps it (the claim), and the
// count says so; more slots than a statement takes go in whole.
func TestAddSlots(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	j := Schedule{Agent: "default", Kind: "every", Spec: "1m", Prompt: "p", Deliver: "none", Approvals: "deny", Misfire: "run-once",
		Created: at, Updated: at, Accounted: at}
	var slots []time.Time
	for i := range 25000 {
		slots = append(slots, at.Add(time.Duration(i+1)*time.Minute))
	}
	ended := at.Add(time.Duration(len(slots)+1) * time.Minute)
	var d ScheduleDelivery
	var taken ScheduleRun
	err := s.UpdateSchedules(ctx, func(tx *ScheduleTx) error {
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		d = ScheduleDelivery{Schedule: j.ID, Kind: "missed", Title: "p", Body: "p did not run", Status: "pending", Created: ended}
		if err := tx.AddDelivery(&d); err != nil {
			return err
		}
		// Slot 7 is taken already: RunNow's row, say.
		taken = ScheduleRun{Schedule: j.ID, Slot: slots[6], Attempt: 1, Due: slots[6], Cause: "manual", Status: "queued"}
		if ok, err := tx.AddRun(&taken); err != nil || !ok {
			t.Fatalf("the first row: %v %v", ok, err)
		}
		u := ScheduleRun{Schedule: j.ID, Slot: slots[0], Attempt: 1, Due: slots[0].Add(7 * time.Second), Cause: "time",
			Status: "missed", Reason: "den was not running", Ended: ended, Delivery: d.ID}
		n, err := tx.AddSlots(u, slots)
		if err != nil {
			return err
		}
		if n != len(slots)-1 {
			t.Errorf("%d rows added, want %d", n, len(slots)-1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.ScheduleRuns(ctx, RunQuery{Schedule: j.ID, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(slots) {
		t.Fatalf("%d rows, want %d", len(runs), len(slots))
	}
	for i, got := range runs {
		slot := slots[len(slots)-1-i] // newest first
		want := ScheduleRun{ID: got.ID, Schedule: j.ID, Slot: slot, Attempt: 1, Due: slot.Add(7 * time.Second), Cause: "time",
			Status: "missed", Reason: "den was not running", Ended: ended, Delivery: d.ID}
		if slot.Equal(taken.Slot) {
			want = taken
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("row of %v (-want +got):\n%s", slot, diff)
		}
		if i > 0 && got.ID >= runs[i-1].ID && !slot.Equal(taken.Slot) && !runs[i-1].Slot.Equal(taken.Slot) {
			t.Fatalf("ids not in slot order: %d after %d", got.ID, runs[i-1].ID)
		}
	}
}

// TestMigrateScheduleRuns: step 14 rebuilds schedule_runs with its
// checks as comparisons. A store made before it keeps its runs whole,
// with their ids; ids go on from where they were (the id of a deleted
// newest run is not given again); every status and cause is taken and
// any other refused, as before; the claim, the live runs' index and the
// cascades hold.
func TestMigrateScheduleRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "den.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:12] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA user_version = 12;
		INSERT INTO schedules (agent, kind, spec, prompt, deliver, approvals, misfire, grace, jitter, retries, created_at, updated_at, accounted)
			VALUES ('default', 'every', '1m', 'p', 'notify', 'deny', 'run-once', 300000000000, 0, 2, 1, 1, 1);
		INSERT INTO schedule_deliveries (schedule_id, kind, title, body, status, created_at) VALUES (1, 'missed', 'p', 'b', 'pending', 5);
		INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status, reason, ended, delivery_id)
			VALUES (1, 60, 1, 61, 'time', 'missed', 'den was not running', 200, 1);
		INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status, reason, started, ended, session_id,
			cost_micro_usd, answer, retry_at, owner)
			VALUES (1, 120, 1, 121, 'catch-up', 'failed', 'the model failed', 130, 140, 's1', 1234, 'half', 300, 'pid 1');
		INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status, started, owner)
			VALUES (1, 120, 2, 300, 'retry', 'running', 301, 'pid 1');
		INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status) VALUES (1, 180, 1, 180, 'time', 'queued');
		DELETE FROM schedule_runs WHERE id = 4;`); err != nil {
		t.Fatal(err)
	}
	before := query(t, db, runsByID)
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(t, s, "PRAGMA user_version"); n != len(migrations) {
		t.Fatalf("user_version %d, want %d", n, len(migrations))
	}
	if diff := cmp.Diff(before, query(t, s.db, runsByID)); diff != "" {
		t.Errorf("runs (-before +after):\n%s", diff)
	}
	if n := count(t, s, "SELECT count(*) FROM sqlite_schema WHERE name IN ('schedule_runs_live', 'schedule_runs_retry') AND tbl_name = 'schedule_runs'"); n != 2 {
		t.Errorf("%d of the runs' indexes", n)
	}
	var plan string
	for _, row := range query(t, s.db, `EXPLAIN QUERY PLAN SELECT id FROM schedule_runs WHERE status IN ('queued', 'running')`) {
		plan += fmt.Sprint(row[len(row)-1]) + "; "
	}
	if !strings.Contains(plan, "schedule_runs_live") {
		t.Errorf("the live runs are found by %q, not their index", plan)
	}
	checkIntegrity(t, s.db)

	err = s.UpdateSchedules(ctx, func(tx *ScheduleTx) error {
		for i, status := range []string{"queued", "running", "ok", "failed", "missed", "skipped", "interrupted"} {
			for k, cause := range []string{"time", "catch-up", "retry", "manual"} {
				u := &ScheduleRun{Schedule: 1, Slot: time.Unix(0, int64(1000+10*i+k)), Attempt: 1, Cause: cause, Status: status}
				if ok, err := tx.AddRun(u); err != nil || !ok {
					t.Fatalf("a %s run by %s: %v %v", status, cause, ok, err)
				}
				if i == 0 && k == 0 && u.ID != 5 {
					t.Errorf("the first run after the migration has id %d, want 5", u.ID)
				}
			}
		}
		for _, u := range []*ScheduleRun{
			{Schedule: 1, Slot: time.Unix(0, 2000), Attempt: 1, Cause: "time", Status: "done"},
			{Schedule: 1, Slot: time.Unix(0, 2001), Attempt: 1, Cause: "cron", Status: "ok"},
		} {
			if _, err := tx.AddRun(u); err == nil {
				t.Errorf("a run with status %q and cause %q was taken", u.Status, u.Cause)
			}
		}
		if ok, err := tx.AddRun(&ScheduleRun{Schedule: 1, Slot: time.Unix(0, 60), Attempt: 1, Cause: "time", Status: "queued"}); ok || err != nil {
			t.Errorf("a slot claimed twice: %v %v", ok, err)
		}
		return tx.DeleteSchedule(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT count(*) FROM schedule_runs"); n != 0 {
		t.Errorf("%d runs outlived their job", n)
	}
}

const runsByID = `SELECT * FROM schedule_runs ORDER BY id`

// query is the rows q gives, as SQLite gives them.
func query(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
