package schedule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWait
}

type fakeWait struct {
	at time.Time
	ch chan struct{}
}

func newClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Until(t time.Time) (<-chan struct{}, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if !t.After(c.now) {
		close(ch)
	} else {
		c.waiters = append(c.waiters, fakeWait{t, ch})
	}
	return ch, func() {}
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// fakeRunner runs turns as the test says: by default the agent answers
// "done <prompt>" and ends its turn.
type fakeRunner struct {
	mu       sync.Mutex
	sessions int
	turns    []fakeTurn
	turn     func(j store.Schedule, prompt string) Turn // nil: ended
	block    chan struct{}                              // when set, turns wait for it
	started  chan struct{}                              // when set, told as each turn starts
	stopped  []string                                   // sessions whose turns a stop ended
	making   chan chan struct{}                         // when set, Session sends it a channel and waits for it to close
}

type fakeTurn struct {
	Job     int64
	Session string
	Prompt  string
}

func (r *fakeRunner) Session(ctx context.Context, j store.Schedule) (string, error) {
	if r.making != nil {
		made := make(chan struct{})
		r.making <- made
		<-made
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if j.Session != "" && j.SessionID != "" {
		return j.SessionID, nil
	}
	r.sessions++
	return fmt.Sprintf("s%d", r.sessions), nil
}

func (r *fakeRunner) Turn(ctx context.Context, session string, j store.Schedule, prompt string) Turn {
	r.mu.Lock()
	r.turns = append(r.turns, fakeTurn{j.ID, session, prompt})
	block, started, turn := r.block, r.started, r.turn
	r.mu.Unlock()
	if started != nil {
		started <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrStopped) {
				// As den serve's runner: the session's turn is canceled,
				// and ends.
				r.mu.Lock()
				r.stopped = append(r.stopped, session)
				r.mu.Unlock()
				return Turn{Reason: "a person stopped the turn", Answer: "halfway", CostUSD: 0.02}
			}
			return Turn{Interrupted: true, Reason: "den stopped during the run"}
		}
	}
	if turn != nil {
		return turn(j, prompt)
	}
	return Turn{Ended: true, Answer: "done " + prompt, CostUSD: 0.01}
}

func (r *fakeRunner) Verify(ctx context.Context, session, command string) Verified {
	var code int
	if _, err := fmt.Sscanf(command, "exit %d", &code); err != nil {
		return Verified{Err: errors.New("bad command")}
	}
	return Verified{Exit: code, Output: "checked " + command}
}

func (r *fakeRunner) Turns() []fakeTurn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fakeTurn(nil), r.turns...)
}

// fakeDeliverer fails the first fails attempts.
type fakeDeliverer struct {
	mu    sync.Mutex
	fails int
	got   []store.ScheduleDelivery
}

func (d *fakeDeliverer) Deliver(ctx context.Context, m store.ScheduleDelivery) Attempt {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, m)
	if d.fails != 0 {
		d.fails--
		return Attempt{Reached: []string{"phone"}, Detail: "push 1/2", Err: errors.New("the push service answered 500")}
	}
	return Attempt{Reached: []string{"laptop"}, Detail: "push 2/2"}
}

type rig struct {
	t     *testing.T
	st    *store.Store
	clock *fakeClock
	run   *fakeRunner
	dlv   *fakeDeliverer
	e     *Engine
	book  *Book
}

// newRig is a store, a fake clock at now, and an engine that took the
// lead at now.
func newRig(t *testing.T, now time.Time) *rig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, st: st, clock: newClock(now), run: &fakeRunner{}, dlv: &fakeDeliverer{}}
	r.book = &Book{Store: st, Clock: r.clock}
	r.e = r.engine()
	return r
}

func (r *rig) engine() *Engine {
	e := New(Options{Store: r.st, Runner: r.run, Deliverer: r.dlv, Clock: r.clock, Owner: "test",
		DeliveryRetry: []time.Duration{time.Minute, 2 * time.Minute}})
	e.started = r.clock.Now()
	r.t.Cleanup(func() { e.endRuns(); e.wg.Wait() })
	return e
}

// restart is den starting again at now: a new engine that takes the
// lead and recovers.
func (r *rig) restart(now time.Time) {
	r.t.Helper()
	r.clock.Set(now)
	r.e = r.engine()
	if err := r.e.recover(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// at moves the clock to now and lets the engine do everything due,
// until it is idle.
func (r *rig) at(now time.Time) {
	r.t.Helper()
	r.clock.Set(now)
	r.settle()
}

// settle ticks until a tick starts nothing.
func (r *rig) settle() {
	for i := 0; i < 100; i++ {
		before := r.activity()
		r.e.tick(context.Background())
		r.e.wg.Wait()
		if r.activity() == before {
			return
		}
	}
	r.t.Fatal("the engine never settled")
}

// activity counts what the fakes were asked to do.
func (r *rig) activity() int {
	r.dlv.mu.Lock()
	defer r.dlv.mu.Unlock()
	return len(r.run.Turns()) + len(r.dlv.got)
}

// until steps the engine through every due moment up to end.
func (r *rig) until(end time.Time) {
	r.t.Helper()
	for i := 0; ; i++ {
		if i > 100000 {
			r.t.Fatal("the engine never got to the end")
		}
		next, err := r.st.ScheduleWake(context.Background())
		if err != nil {
			r.t.Fatal(err)
		}
		if next.IsZero() || next.After(end) {
			r.at(end)
			return
		}
		if next.Before(r.clock.Now()) {
			next = r.clock.Now()
		}
		r.at(next)
	}
}

func (r *rig) add(by string, flags map[string]string) JobView {
	r.t.Helper()
	p, err := ParamsFrom(flags)
	if err != nil {
		r.t.Fatal(err)
	}
	j, err := r.book.Add(context.Background(), "default", by, p)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func (r *rig) history(id int64) []RunView {
	r.t.Helper()
	h, err := r.book.History(context.Background(), "", id, 100000, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	// Oldest first, for reading.
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return h
}

// summary is each row as "slot status cause [late]", oldest first.
func summary(h []RunView, loc *time.Location) []string {
	var out []string
	for _, u := range h {
		s := fmt.Sprintf("%s %s %s", u.Slot.In(loc).Format("01-02 15:04"), u.Status, u.Cause)
		if u.Attempt > 1 {
			s += fmt.Sprintf(" #%d", u.Attempt)
		}
		out = append(out, s)
	}
	return out
}

var utc = time.UTC

func day(h, m int) time.Time { return time.Date(2026, 6, 1, h, m, 0, 0, utc) }

// TestOnTime: a due job starts at its time, ends ok, and its answer is
// delivered; its history has one row with the start, the end, the
// session, the cost and the delivery.
func TestOnTime(t *testing.T) {
	r := newRig(t, day(6, 0))
	j := r.add("user", map[string]string{"cron": "0 7 * * *", "tz": "UTC", "jitter": "0", "prompt": "morning digest"})
	if j.NextRun == nil || !j.NextRun.Equal(day(7, 0)) || j.State != StateActive {
		t.Fatalf("new job: %+v", j)
	}
	r.at(day(6, 59))
	if len(r.run.Turns()) != 0 {
		t.Fatal("ran before its time")
	}
	r.at(day(7, 0))
	h := r.history(j.ID)
	if len(h) != 1 {
		t.Fatalf("history %+v", h)
	}
	u := h[0]
	if u.Status != OK || u.Cause != CauseTime || !u.Started.Equal(day(7, 0)) || u.Late != "" || u.Session != "s1" ||
		u.CostUSD != 0.01 || u.Answer != "done morning digest" || u.Delivery != DeliveryDelivered || u.DeliveryDetail != "push 2/2" {
		t.Errorf("run %+v", u)
	}
	if got := r.dlv.got; len(got) != 1 || got[0].Kind != "result" || got[0].Body != "done morning digest" || got[0].Session != "s1" {
		t.Errorf("delivered %+v", got)
	}
	v, _ := r.book.Get(context.Background(), "", j.ID)
	if v.NextRun == nil || !v.NextRun.Equal(day(7, 0).AddDate(0, 0, 1)) || v.Last == nil || v.Last.Status != OK {
		t.Errorf("job after the run: %+v", v)
	}
	// The events of the change, the run and the delivery were stored.
	evs, _ := r.st.Events(context.Background(), "", 0, 0)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "schedule schedule_run schedule_run schedule_run schedule_delivery schedule_run schedule_delivery" {
		t.Errorf("events: %s", got)
	}
}

// TestMisfirePolicies: den was not running from 00:30 to 05:30 while an
// hourly job's slots at 01:00 … 05:00 passed. run-once records four
// missed and runs the newest late; run-all runs every one, in order,
// one at a time; skip runs none. Each slot has one row, and the user is
// told in one message. A restart within the grace window runs the
// newest as on time.
func TestMisfirePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		restart time.Time
		want    []string
		turns   int
		told    string
	}{
		{RunOnce, day(5, 30), []string{"06-01 01:00 missed time", "06-01 02:00 missed time", "06-01 03:00 missed time",
			"06-01 04:00 missed time", "06-01 05:00 ok catch-up"}, 1, "did not run at 01:00, 02:00, 03:00 and 04:00: den was not running. It runs once now, late."},
		{RunAll, day(5, 30), []string{"06-01 01:00 ok catch-up", "06-01 02:00 ok catch-up", "06-01 03:00 ok catch-up",
			"06-01 04:00 ok catch-up", "06-01 05:00 ok catch-up"}, 5, ""},
		{Skip, day(5, 30), []string{"06-01 01:00 missed time", "06-01 02:00 missed time", "06-01 03:00 missed time",
			"06-01 04:00 missed time", "06-01 05:00 missed time"}, 0, "did not run at 01:00, 02:00, 03:00, 04:00 and 05:00: den was not running."},
		{Skip, day(5, 3), []string{"06-01 01:00 missed time", "06-01 02:00 missed time", "06-01 03:00 missed time",
			"06-01 04:00 missed time", "06-01 05:00 ok time"}, 1, "It runs now for 05:00."},
		{RunOnce, day(5, 3), []string{"06-01 01:00 missed time", "06-01 02:00 missed time", "06-01 03:00 missed time",
			"06-01 04:00 missed time", "06-01 05:00 ok time"}, 1, "It runs now for 05:00."},
	} {
		t.Run(tc.policy+"@"+tc.restart.Format("15:04"), func(t *testing.T) {
			r := newRig(t, day(0, 0))
			j := r.add("user", map[string]string{"cron": "0 * * * *", "tz": "UTC", "jitter": "0", "misfire": tc.policy, "prompt": "hourly"})
			r.at(day(0, 30))
			r.restart(tc.restart)
			r.settle()
			got := summary(r.history(j.ID), utc)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("history:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if n := len(r.run.Turns()); n != tc.turns {
				t.Errorf("%d turns, want %d", n, tc.turns)
			}
			var missed []store.ScheduleDelivery
			for _, d := range r.dlv.got {
				if d.Kind == "missed" {
					missed = append(missed, d)
				}
			}
			switch {
			case tc.told == "" && len(missed) != 0:
				t.Errorf("told of missed runs: %+v", missed)
			case tc.told != "" && (len(missed) != 1 || !strings.Contains(missed[0].Body, tc.told)):
				t.Errorf("told %+v, want %q", missed, tc.told)
			}
			h := r.history(j.ID)
			last := h[len(h)-1]
			if last.Status == OK && last.Cause == CauseCatchUp {
				if last.Late == "" || !strings.Contains(last.Reason, "late") {
					t.Errorf("a late run does not say so: %+v", last)
				}
				if p := r.run.Turns()[len(r.run.Turns())-1].Prompt; !strings.Contains(p, "starts") || !strings.Contains(p, "late") {
					t.Errorf("the agent is not told the run is late: %q", p)
				}
			}
			for _, u := range h {
				if u.Status == Missed && (u.Delivery == DeliveryNone || u.Reason == "") {
					t.Errorf("a missed slot without its reason or message: %+v", u)
				}
			}
		})
	}
}

// TestOverlapSkipped: a slot that comes while the job's previous run
// still runs is skipped, said so, and told; the next slot runs.
func TestOverlapSkipped(t *testing.T) {
	r := newRig(t, day(0, 0))
	j := r.add("user", map[string]string{"every": "1m", "prompt": "slow"})
	r.run.block = make(chan struct{})
	r.clock.Set(day(0, 1))
	r.e.tick(context.Background())
	r.clock.Set(day(0, 2))
	r.e.tick(context.Background())
	close(r.run.block)
	r.e.wg.Wait()
	r.at(day(0, 3))
	got := summary(r.history(j.ID), utc)
	want := []string{"06-01 00:01 ok time", "06-01 00:02 skipped time", "06-01 00:03 ok time"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// TestInterruptedRetried: den killed during a run leaves its row
// running; the next den records it interrupted and runs it again
// (attempt 2) at once. With no retries left, it stays interrupted and
// the user is told.
func TestInterruptedRetried(t *testing.T) {
	for _, retries := range []string{"2", "0"} {
		t.Run("retries="+retries, func(t *testing.T) {
			r := newRig(t, day(6, 0))
			j := r.add("user", map[string]string{"at": "2026-06-01T07:00", "tz": "UTC", "retries": retries, "prompt": "once"})
			// den dies during the run: its row is left running.
			r.clock.Set(day(7, 0))
			r.leftRunning(t, j.ID, day(7, 0))
			r.restart(day(7, 5))
			r.settle()
			got := summary(r.history(j.ID), utc)
			want := []string{"06-01 07:00 interrupted time", "06-01 07:00 ok retry #2"}
			if retries == "0" {
				want = want[:1]
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("history %q, want %q", got, want)
			}
			kinds := []string{}
			for _, d := range r.dlv.got {
				kinds = append(kinds, d.Kind)
			}
			if retries == "0" && strings.Join(kinds, " ") != "failure" || retries != "0" && strings.Join(kinds, " ") != "result" {
				t.Errorf("delivered %v", kinds)
			}
			v, _ := r.book.Get(context.Background(), "", j.ID)
			if v.State != StateDone {
				t.Errorf("a one-shot that ran is %s", v.State)
			}
		})
	}
}

// TestStatusesHonest: ok only when the agent ended its turn and the
// verification passed. A failing verification fails the run, with its
// exit code and output, and is not retried; a turn stopped by a limit
// fails and is not retried; a model's error fails and is retried after
// a minute.
func TestStatusesHonest(t *testing.T) {
	r := newRig(t, day(0, 0))
	verified := r.add("user", map[string]string{"in": "1m", "verify": "exit 0", "prompt": "a"})
	failing := r.add("user", map[string]string{"in": "1m", "verify": "exit 3", "prompt": "b"})
	limited := r.add("user", map[string]string{"in": "1m", "prompt": "c"})
	flaky := r.add("user", map[string]string{"in": "1m", "prompt": "d"})
	calls := 0
	r.run.turn = func(j store.Schedule, prompt string) Turn {
		switch j.Prompt {
		case "c":
			return Turn{Reason: "turn limit reached", Answer: "partial"}
		case "d":
			calls++
			if calls == 1 {
				return Turn{Reason: "the model failed: 529 overloaded", Retryable: true}
			}
		}
		return Turn{Ended: true, Answer: "done"}
	}
	r.at(day(0, 1))
	status := func(id int64) []string {
		var out []string
		for _, u := range r.history(id) {
			out = append(out, u.Status+": "+u.Reason)
		}
		return out
	}
	if got := status(verified.ID); len(got) != 1 || got[0] != "ok: verified" {
		t.Errorf("verified: %q", got)
	}
	if got := status(failing.ID); len(got) != 1 || got[0] != "failed: the verification exited 3: checked exit 3" {
		t.Errorf("failing verification: %q", got)
	}
	if got := status(limited.ID); len(got) != 1 || got[0] != "failed: turn limit reached" {
		t.Errorf("turn limit: %q", got)
	}
	if got := status(flaky.ID); len(got) != 1 || got[0] != "failed: the model failed: 529 overloaded" {
		t.Errorf("model error: %q", got)
	}
	r.at(day(0, 2))
	if got := status(flaky.ID); len(got) != 2 || got[1] != "ok: attempt 2: the last was failed (the model failed: 529 overloaded)" {
		t.Errorf("model error, a minute later: %q", got)
	}
	var failures []string
	for _, d := range r.dlv.got {
		if d.Kind == "failure" {
			failures = append(failures, d.Body)
		}
	}
	slices.Sort(failures)
	if len(failures) != 2 || !strings.Contains(failures[0], "exited 3") || !strings.Contains(failures[1], "turn limit") {
		t.Errorf("failures told: %q", failures)
	}
}

// TestDeliveryRetried: a delivery that fails is tried again after each
// wait, and counts as delivered once it is; one that keeps failing is
// failed after the last wait, and the faces are told.
func TestDeliveryRetried(t *testing.T) {
	for _, fails := range []int{2, 3} {
		t.Run(fmt.Sprint(fails), func(t *testing.T) {
			r := newRig(t, day(0, 0))
			j := r.add("user", map[string]string{"in": "1m", "prompt": "deliver me"})
			r.dlv.fails = fails
			r.at(day(0, 1))
			if h := r.history(j.ID); h[0].Delivery != DeliveryPending || h[0].DeliveryError != "the push service answered 500" {
				t.Fatalf("after a failed attempt: %+v", h[0])
			}
			r.at(day(0, 2))
			r.at(day(0, 4))
			h := r.history(j.ID)
			if len(r.dlv.got) != 3 {
				t.Errorf("%d attempts, want 3", len(r.dlv.got))
			}
			// Each attempt knows what the ones before reached.
			if got := r.dlv.got[2].Reached; len(got) != 1 || got[0] != "phone" {
				t.Errorf("the third attempt was told %q reached", got)
			}
			evs, _ := r.st.Events(context.Background(), "", 0, 0)
			failed := false
			for _, e := range evs {
				failed = failed || e.Type == "schedule_delivery" && strings.Contains(string(e.Data), `"status":"failed"`)
			}
			if fails == 2 && (h[0].Delivery != DeliveryDelivered || failed) {
				t.Errorf("delivered on the third attempt: %+v", h[0])
			}
			if fails == 3 && (h[0].Delivery != DeliveryFailed || h[0].DeliveryError == "" || !failed) {
				t.Errorf("failed for good: %+v, event %v", h[0], failed)
			}
			if h[0].Status != OK {
				t.Errorf("the run's status changed with its delivery: %+v", h[0])
			}
		})
	}
}

// TestDSTAndLeapDay runs a year of daily jobs in Europe/Berlin, over
// both changes of the clocks, and one on 29 February over four years:
// each slot runs once, at its wall time (02:30's skipped day at 03:00).
func TestDSTAndLeapDay(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	r := newRig(t, time.Date(2026, 1, 1, 0, 0, 0, 0, berlin))
	var mu sync.Mutex
	started := map[string][]time.Time{}
	var clock *fakeClock
	turn := func(j store.Schedule, prompt string) Turn {
		mu.Lock()
		defer mu.Unlock()
		started[j.Prompt] = append(started[j.Prompt], clock.Now())
		return Turn{Ended: true}
	}
	r.run.turn, clock = turn, r.clock
	night := r.add("user", map[string]string{"cron": "30 2 * * *", "tz": "Europe/Berlin", "jitter": "0", "prompt": "night", "deliver": "none"})
	r.add("user", map[string]string{"cron": "0 7 * * *", "tz": "Europe/Berlin", "jitter": "0", "prompt": "morning", "deliver": "none"})
	r.until(time.Date(2027, 1, 1, 0, 0, 0, 0, berlin))
	// History keeps 90 days, and at least 200 rows, of each job.
	if n := len(r.history(night.ID)); n != keepRuns {
		t.Errorf("the history of a daily job over a year has %d rows, want %d", n, keepRuns)
	}
	leapRig := newRig(t, time.Date(2026, 1, 1, 0, 0, 0, 0, berlin))
	leapRig.run.turn, clock = turn, leapRig.clock
	leapRig.add("user", map[string]string{"cron": "0 9 29 2 *", "tz": "Europe/Berlin", "prompt": "leap", "deliver": "none"})
	leapRig.until(time.Date(2030, 1, 1, 0, 0, 0, 0, berlin))
	for _, tc := range []struct {
		name  string
		runs  []time.Time
		n     int
		check func(w time.Time) bool
	}{
		{"02:30", started["night"], 365, func(w time.Time) bool {
			if w.Month() == 3 && w.Day() == 29 {
				return w.Hour() == 3 && w.Minute() == 0
			}
			return w.Hour() == 2 && w.Minute() == 30
		}},
		{"07:00", started["morning"], 365, func(w time.Time) bool { return w.Hour() == 7 && w.Minute() == 0 }},
		{"29 February", started["leap"], 1, func(w time.Time) bool {
			// The job's jitter is within the minute.
			return w.Year() == 2028 && w.Month() == 2 && w.Day() == 29 && w.Hour() == 9 && w.Minute() == 0
		}},
	} {
		if len(tc.runs) != tc.n {
			t.Errorf("%s: %d runs, want %d", tc.name, len(tc.runs), tc.n)
		}
		for i, at := range tc.runs {
			if !tc.check(at.In(berlin)) || i > 0 && !at.After(tc.runs[i-1]) {
				t.Fatalf("%s: run %d at %s", tc.name, i, at.In(berlin))
			}
		}
	}
	// 25 October has 25 hours; 29 March 23: the runs are a day apart
	// on the wall clock.
	for i, at := range started["morning"][1:] {
		d := at.Sub(started["morning"][i])
		if d != 24*time.Hour && d != 23*time.Hour && d != 25*time.Hour {
			t.Fatalf("07:00 runs %v apart", d)
		}
	}
}

// TestTwoEngines: two schedulers on one store (two dens on one data dir
// without the leader's lock, the worst case) both wake for the same
// slots: each slot runs once.
func TestTwoEngines(t *testing.T) {
	r := newRig(t, day(0, 0))
	var ids []int64
	for i := range 20 {
		ids = append(ids, r.add("user", map[string]string{"every": "1m", "prompt": fmt.Sprint("job ", i), "deliver": "none"}).ID)
	}
	other := &rig{t: t, st: r.st, clock: r.clock, run: &fakeRunner{}, dlv: &fakeDeliverer{}}
	e2 := other.engine()
	for m := 1; m <= 10; m++ {
		r.clock.Set(day(0, m))
		// Each wakes until nothing is left to start (4 runs at a time).
		for range 6 {
			var wg sync.WaitGroup
			wg.Go(func() { r.e.tick(context.Background()) })
			wg.Go(func() { e2.tick(context.Background()) })
			wg.Wait()
			r.e.wg.Wait()
			e2.wg.Wait()
		}
	}
	if n := len(r.run.Turns()) + len(other.run.Turns()); n != 200 {
		t.Errorf("%d runs of 20 jobs over 10 minutes, want 200", n)
	}
	for _, id := range ids {
		seen := map[time.Time]bool{}
		for _, u := range r.history(id) {
			if seen[u.Slot] || u.Status != OK {
				t.Fatalf("job %d: %+v", id, u)
			}
			seen[u.Slot] = true
		}
	}
}

// TestLeaderLock: one scheduler leads per lock file; a second waits
// until the first lets go.
func TestLeaderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule.lock")
	first, err := lead(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if f, err := lead(ctx, path); err == nil {
		f.Close()
		t.Fatal("a second leader took the lock")
	}
	first.Close()
	second, err := lead(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	second.Close()
}

// leftRunning records job id's run due at due as running, owned by a den
// that died: what den finds after it was killed mid-run.
func (r *rig) leftRunning(t *testing.T, id int64, due time.Time) {
	t.Helper()
	err := r.st.UpdateSchedules(context.Background(), func(tx *store.ScheduleTx) error {
		cur, err := tx.Schedule(id)
		if err != nil {
			return err
		}
		cur.Accounted, cur.NextDue = due, time.Time{}
		if err := tx.PutSchedule(&cur); err != nil {
			return err
		}
		_, err = tx.AddRun(&store.ScheduleRun{Schedule: id, Slot: due, Attempt: 1, Due: due, Cause: CauseTime,
			Status: Running, Started: due, Session: "s0", Owner: "a den that died"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
