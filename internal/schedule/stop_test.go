package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// TestStop: a person stops a run whose turn is blocked in the model.
// Its row ends at once, failed, "stopped by the user"; the scheduler,
// at its next look, cancels the run's context with ErrStopped, and the
// turn ends; the row then has what the turn cost and answered. It is
// not retried, though the job has retries left. A job that delivers its
// answers delivers a note that the run was stopped; one that delivers
// nothing delivers nothing. A job with nothing running, and a run that
// is not in progress, give ErrNotRunning.
func TestStop(t *testing.T) {
	for _, deliver := range []string{DeliverNotify, DeliverNone} {
		t.Run(deliver, func(t *testing.T) {
			r := newRig(t, day(0, 0))
			ctx := context.Background()
			j := r.add("user", map[string]string{"in": "1m", "retries": "2", "deliver": deliver, "prompt": "loop forever"})
			if _, err := r.book.Stop(ctx, "", j.ID, 0); !errors.Is(err, ErrNotRunning) {
				t.Fatalf("stop before the run: %v, want ErrNotRunning", err)
			}
			r.run.block, r.run.started = make(chan struct{}), make(chan struct{}, 1)
			r.clock.Set(day(0, 1))
			r.e.tick(ctx)
			<-r.run.started
			run := r.history(j.ID)[0]
			if _, err := r.book.Stop(ctx, "", j.ID, run.ID+1); !errors.Is(err, ErrNotRunning) {
				t.Errorf("stop of a run that is not in progress: %v, want ErrNotRunning", err)
			}

			r.clock.Set(day(0, 2))
			got, err := r.book.Stop(ctx, "", j.ID, 0)
			if err != nil || len(got) != 1 || got[0].ID != run.ID || got[0].Status != Failed || got[0].Reason != "stopped by the user" ||
				got[0].Ended == nil || got[0].RetryAt != nil {
				t.Fatalf("stop: %+v %v", got, err)
			}
			r.e.tick(ctx)
			waitRuns(t, r.e)
			if r.run.stopped == nil || strings.Join(r.run.stopped, " ") != "s1" {
				t.Errorf("turns ended by a stop: %q, want the run's session's", r.run.stopped)
			}

			// Nothing more runs: a stop is not retried.
			r.until(day(3, 0))
			h := r.history(j.ID)
			if len(h) != 1 || len(r.run.Turns()) != 1 {
				t.Fatalf("after the stop, %d turns; history %+v", len(r.run.Turns()), h)
			}
			u := h[0]
			if u.Status != Failed || u.Reason != "stopped by the user" || u.RetryAt != nil || u.Session != "s1" ||
				u.Answer != "halfway" || u.CostUSD != 0.02 || u.Ended == nil || !u.Ended.Equal(day(0, 2)) {
				t.Errorf("the stopped run: %+v", u)
			}
			var kinds []string
			for _, d := range r.dlv.got {
				kinds = append(kinds, d.Kind+": "+d.Title+": "+d.Body)
			}
			switch want := "failure: loop forever stopped: The run was stopped by the user. Its session has what the agent did until then."; {
			case deliver == DeliverNotify && (len(kinds) != 1 || kinds[0] != want || u.Delivery != DeliveryDelivered):
				t.Errorf("delivered %q (%s), want %q", kinds, u.Delivery, want)
			case deliver == DeliverNone && (len(kinds) != 0 || u.Delivery != DeliveryNone):
				t.Errorf("a job that delivers nothing delivered %q (%s)", kinds, u.Delivery)
			}
			if v, _ := r.book.Get(ctx, "", j.ID); v.State != StateDone {
				t.Errorf("the one-shot job after its stopped run: %s", v.State)
			}
			if _, err := r.book.Stop(ctx, "", j.ID, 0); !errors.Is(err, ErrNotRunning) {
				t.Errorf("a second stop: %v, want ErrNotRunning", err)
			}
			if changes := changesTold(t, r.st); !strings.HasSuffix(changes, "added stopped") {
				t.Errorf("changes told: %s", changes)
			}
		})
	}
}

// TestStopBeforeTheTurn: a run stopped while its session is being made
// stays stopped (recording the session does not make it running again),
// and its prompt is not sent.
func TestStopBeforeTheTurn(t *testing.T) {
	r := newRig(t, day(0, 0))
	ctx := context.Background()
	j := r.add("user", map[string]string{"in": "1m", "prompt": "never sent"})
	r.run.making = make(chan chan struct{})
	r.clock.Set(day(0, 1))
	r.e.tick(ctx)
	made := <-r.run.making
	if _, err := r.book.Stop(ctx, "", j.ID, 0); err != nil {
		t.Fatal(err)
	}
	r.e.tick(ctx)
	close(made)
	waitRuns(t, r.e)
	h := r.history(j.ID)
	if len(h) != 1 || h[0].Status != Failed || h[0].Reason != "stopped by the user" || h[0].Session != "s1" || len(r.run.Turns()) != 0 {
		t.Errorf("%d turns; history %+v", len(r.run.Turns()), h)
	}
}

// TestStopLeftRunning: a run left running by a den that was killed has
// no turn to cancel; stopped, it is recorded stopped, and the next den
// neither records it interrupted nor retries it.
func TestStopLeftRunning(t *testing.T) {
	r := newRig(t, day(6, 0))
	ctx := context.Background()
	j := r.add("user", map[string]string{"at": "2026-06-01T07:00", "tz": "UTC", "retries": "2", "prompt": "once"})
	r.clock.Set(day(7, 0))
	r.leftRunning(t, j.ID, day(7, 0))
	r.clock.Set(day(7, 1))
	if got, err := r.book.Stop(ctx, "", j.ID, 0); err != nil || len(got) != 1 || got[0].Status != Failed {
		t.Fatalf("stop: %+v %v", got, err)
	}
	r.restart(day(7, 5))
	r.settle()
	h := r.history(j.ID)
	if len(h) != 1 || h[0].Status != Failed || h[0].Reason != "stopped by the user" || len(r.run.Turns()) != 0 {
		t.Errorf("after the next start, %d turns; history %+v", len(r.run.Turns()), h)
	}
}

// waitRuns waits for the engine's runs and deliveries to end.
func waitRuns(t *testing.T, e *Engine) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stopped run's turn never ended")
	}
}

// changesTold is the changes of the "schedule" events stored, oldest
// first.
func changesTold(t *testing.T, st *store.Store) string {
	t.Helper()
	evs, err := st.Events(context.Background(), "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, e := range evs {
		if e.Type == (&Changed{}).Type() {
			var c Changed
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, c.Change)
		}
	}
	return strings.Join(changes, " ")
}
