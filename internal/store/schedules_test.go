package store

import (
	"context"
	"errors"
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
