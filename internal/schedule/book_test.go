package schedule

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

func ptr[T any](v T) *T { return &v }

// TestBookAgentsSeeTheirOwn: an agent sees and changes its own jobs
// only; another agent's is "not found", as is a job that does not
// exist. The user sees every job.
func TestBookAgentsSeeTheirOwn(t *testing.T) {
	r := newRig(t, day(0, 0))
	ctx := context.Background()
	mine, err := r.book.Add(ctx, "alice", "agent s1", Params{When: Spec{Every: "1h"}, Prompt: ptr("a")})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := r.book.Add(ctx, "bob", "user", Params{When: Spec{Every: "1h"}, Prompt: ptr("b")})
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := r.book.List(ctx, "alice"); len(list) != 1 || list[0].ID != mine.ID {
		t.Errorf("alice lists %+v", list)
	}
	if list, _ := r.book.List(ctx, ""); len(list) != 2 {
		t.Errorf("the user lists %d jobs", len(list))
	}
	for name, err := range map[string]error{
		"get":     second(r.book.Get(ctx, "alice", theirs.ID)),
		"edit":    second(r.book.Edit(ctx, "alice", theirs.ID, Params{Prompt: ptr("x")})),
		"pause":   second(r.book.Pause(ctx, "alice", theirs.ID)),
		"resume":  second(r.book.Resume(ctx, "alice", theirs.ID)),
		"run":     second(r.book.RunNow(ctx, "alice", theirs.ID)),
		"history": second(r.book.History(ctx, "alice", theirs.ID, 0, 0)),
		"remove":  r.book.Remove(ctx, "alice", theirs.ID),
		"missing": second(r.book.Get(ctx, "", 999)),
	} {
		if !errors.Is(err, store.ErrNotFound) || strings.Contains(err.Error(), "bob") {
			t.Errorf("%s of another agent's job: %v", name, err)
		}
	}
	if j, _ := r.book.Get(ctx, "", theirs.ID); j.Prompt != "b" || j.State != StateActive {
		t.Errorf("bob's job after alice tried: %+v", j)
	}
	if h, _ := r.book.History(ctx, "alice", 0, 0, 0); len(h) != 0 {
		t.Errorf("alice's history: %+v", h)
	}
}

func second[T any](_ T, err error) error { return err }

// TestBookChecks: what den would not run as written is refused, saying
// why.
func TestBookChecks(t *testing.T) {
	r := newRig(t, day(0, 0))
	for _, tc := range []struct {
		flags map[string]string
		want  string
	}{
		{map[string]string{"prompt": "x"}, "say when"},
		{map[string]string{"every": "1h"}, "no prompt"},
		{map[string]string{"every": "1h", "cron": "* * * * *", "tz": "UTC", "prompt": "x"}, "exactly one"},
		{map[string]string{"every": "30s", "prompt": "x"}, "shortest interval"},
		{map[string]string{"at": "2026-05-01T07:00", "tz": "UTC", "prompt": "x"}, "has passed"},
		{map[string]string{"cron": "0 7 * * *", "tz": "Mars/Olympus", "prompt": "x"}, "not an IANA zone"},
		{map[string]string{"every": "1h", "tz": "UTC", "prompt": "x"}, "--tz goes with"},
		{map[string]string{"in": "20m", "misfire": "sometimes", "prompt": "x"}, "--misfire"},
		{map[string]string{"in": "20m", "budget": "a lot", "prompt": "x"}, "--budget"},
		{map[string]string{"in": "20m", "deliver": "email", "prompt": "x"}, "--deliver"},
		{map[string]string{"in": "20m", "retries": "99", "prompt": "x"}, "--retries"},
		{map[string]string{"in": "20m", "name": "two\nlines", "prompt": "x"}, "one line"},
	} {
		p, err := ParamsFrom(tc.flags)
		if err == nil {
			_, err = r.book.Add(context.Background(), "default", "user", p)
		}
		if err == nil || !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.flags, err, tc.want)
		}
	}
	if _, err := ParamsFrom(map[string]string{"colour": "red"}); err == nil {
		t.Error("an unknown flag was taken")
	}
	// An agent has at most MaxJobsPerAgent jobs; the user is not
	// bounded.
	for range MaxJobsPerAgent {
		r.add("agent s1", map[string]string{"every": "1h", "prompt": "x"})
	}
	if _, err := r.book.Add(context.Background(), "default", "agent s1", Params{When: Spec{Every: "1h"}, Prompt: ptr("x")}); !errors.Is(err, ErrBadParams) {
		t.Errorf("job %d of an agent: %v", MaxJobsPerAgent+1, err)
	}
	r.add("user", map[string]string{"every": "1h", "prompt": "x"})
}

// TestBookWhileDenIsDown: den schedule edit, pause and resume made
// while no den serve runs still account for every slot: the slots
// that passed are recorded missed before the job changes; the slots of
// a pause are not due; a one-shot time that passes during a pause is
// recorded missed on resume.
func TestBookWhileDenIsDown(t *testing.T) {
	r := newRig(t, day(0, 0))
	ctx := context.Background()
	hourly := r.add("user", map[string]string{"cron": "0 * * * *", "tz": "UTC", "jitter": "0", "prompt": "h"})
	paused := r.add("user", map[string]string{"cron": "0 * * * *", "tz": "UTC", "jitter": "0", "prompt": "p"})
	once := r.add("user", map[string]string{"at": "2026-06-01T05:00", "tz": "UTC", "prompt": "o"})
	r.clock.Set(day(2, 30))
	if _, err := r.book.Edit(ctx, "", hourly.ID, Params{When: Spec{Cron: "30 * * * *", TZ: "UTC"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.book.Pause(ctx, "", paused.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.book.Pause(ctx, "", once.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{"06-01 01:00 missed time", "06-01 02:00 missed time"}
	for _, id := range []int64{hourly.ID, paused.ID} {
		if got := summary(r.history(id), utc); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("job %d after the change: %q, want %q", id, got, want)
		}
	}
	r.clock.Set(day(6, 10))
	for _, id := range []int64{paused.ID, once.ID} {
		if _, err := r.book.Resume(ctx, "", id); err != nil {
			t.Fatal(err)
		}
	}
	r.restart(day(6, 10))
	r.settle()
	// The edited job's new slots after 02:30 to 06:00 were missed (den
	// was down); run-once runs 05:30's now.
	if got := summary(r.history(hourly.ID), utc); len(got) != 5 || got[2] != "06-01 03:30 missed time" || got[4] != "06-01 05:30 ok catch-up" {
		t.Errorf("edited job: %q", got)
	}
	if got := summary(r.history(paused.ID), utc); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the paused job's pause made rows: %q", got)
	}
	if got := summary(r.history(once.ID), utc); len(got) != 1 || got[0] != "06-01 05:00 missed time" {
		t.Errorf("a one-shot paused over its time: %q", got)
	}
	if v, _ := r.book.Get(ctx, "", once.ID); v.State != StateDone {
		t.Errorf("the one-shot is %s", v.State)
	}
	v, _ := r.book.Get(ctx, "", paused.ID)
	if v.State != StateActive || v.NextRun == nil || !v.NextRun.Equal(day(7, 0)) {
		t.Errorf("resumed job: %+v", v)
	}
}

// TestRunNow: a job runs at once when asked, paused or not, one run at
// a time; a second ask waits for the first.
func TestRunNow(t *testing.T) {
	r := newRig(t, day(0, 0))
	ctx := context.Background()
	j := r.add("user", map[string]string{"cron": "0 7 * * *", "tz": "UTC", "prompt": "now"})
	if _, err := r.book.Pause(ctx, "", j.ID); err != nil {
		t.Fatal(err)
	}
	r.clock.Set(day(0, 1))
	for range 2 {
		u, err := r.book.RunNow(ctx, "", j.ID)
		if err != nil || u.Status != Queued || u.Cause != CauseManual {
			t.Fatalf("run now: %+v %v", u, err)
		}
	}
	r.settle()
	got := summary(r.history(j.ID), utc)
	if len(got) != 2 || got[0] != "06-01 00:01 ok manual" || got[1] != "06-01 00:01 ok manual" {
		t.Errorf("history %q", got)
	}
	if v, _ := r.book.Get(ctx, "", j.ID); v.State != StatePaused || v.NextRun != nil {
		t.Errorf("after a run now, the paused job: %+v", v)
	}
}

// TestNamedSession: a job that continues a named session uses the same
// session at each run; the first run makes it.
func TestNamedSession(t *testing.T) {
	r := newRig(t, day(0, 0))
	j := r.add("user", map[string]string{"every": "1h", "session": "journal", "prompt": "log"})
	r.until(day(3, 0))
	turns := r.run.Turns()
	if len(turns) != 3 || turns[0].Session != "s1" || turns[1].Session != "s1" || turns[2].Session != "s1" {
		t.Errorf("turns %+v", turns)
	}
	if v, _ := r.book.Get(context.Background(), "", j.ID); v.SessionID != "s1" {
		t.Errorf("job %+v", v)
	}
}

// TestRunLoop: Run, on the wall clock, starts a job due a moment later
// with no tick of the test, and stops when its context ends.
func TestRunLoop(t *testing.T) {
	st, err := store.Open(t.TempDir() + "/den.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	started := make(chan struct{}, 1)
	run := &fakeRunner{started: started}
	e := New(Options{Store: st, Runner: run, Lock: t.TempDir() + "/schedule.lock"})
	book := &Book{Store: st, Wake: e.Wake}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	if _, err := book.Add(ctx, "default", "user", Params{When: Spec{At: time.Now().Add(1500 * time.Millisecond).Format(time.RFC3339), TZ: "UTC"}, Prompt: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job never started")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
