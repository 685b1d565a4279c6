package schedule

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// TestCatchUpDay: den starts after 24 hours down, with two schedulers
// on the store (the worst case): the history of each every-minute job,
// read a page at a time as the API and den schedule history read it,
// has each of the 1,440 times once, with the status its policy gives
// and why; the newest runs once, or not at all; and each job's user is
// told once, of every missed time.
func TestCatchUpDay(t *testing.T) {
	r := newRig(t, day(0, 0))
	ctx := context.Background()
	once := r.add("user", map[string]string{"every": "1m", "grace": "10s", "prompt": "once"})
	skip := r.add("user", map[string]string{"every": "1m", "grace": "10s", "misfire": "skip", "prompt": "skip"})
	onTime := r.add("user", map[string]string{"every": "1m", "misfire": "skip", "prompt": "on time"})
	restart := day(0, 0).Add(24*time.Hour + 30*time.Second)
	r.restart(restart)
	other := &rig{t: t, st: r.st, clock: r.clock, run: &fakeRunner{}, dlv: &fakeDeliverer{}}
	e2 := other.engine()
	for range 3 {
		var wg sync.WaitGroup
		wg.Go(func() { r.e.tick(ctx) })
		wg.Go(func() { e2.tick(ctx) })
		wg.Wait()
		r.e.wg.Wait()
		e2.wg.Wait()
	}
	if n := len(r.run.Turns()) + len(other.run.Turns()); n != 2 {
		t.Errorf("%d runs, want 2: the run-once job's catch-up and the on-time slot", n)
	}
	// The times span a day: each is told with its date.
	times := "did not run at Jun 1 00:01, Jun 1 00:02, Jun 1 00:03, Jun 1 00:04 and "
	want := map[string]string{
		"once":    "once " + times + "1435 more, the last at Jun 1 23:59: den was not running. It runs once now, late.",
		"skip":    "skip " + times + "1436 more, the last at Jun 2 00:00: den was not running.",
		"on time": "on time " + times + "1435 more, the last at Jun 1 23:59: den was not running. It runs now for 00:00.",
	}
	for _, d := range append(r.dlv.got, other.dlv.got...) {
		if d.Kind != "missed" {
			continue
		}
		if d.Body != want[d.Title] {
			t.Errorf("the note of %s: %q, want %q", d.Title, d.Body, want[d.Title])
		}
		delete(want, d.Title)
	}
	if len(want) != 0 {
		t.Errorf("no note of the missed times of %v", want)
	}

	for _, tc := range []struct {
		job    JobView
		missed int    // the oldest missed, for "den was not running"
		last   string // the newest: "status cause"
	}{
		{once, 1439, "ok catch-up"},
		{skip, 1440, "missed time"},
		{onTime, 1439, "ok time"},
	} {
		var h []RunView
		for before := int64(0); ; {
			page, err := r.book.History(ctx, "", tc.job.ID, 100, before)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			h = append(h, page...)
			before = page[len(page)-1].ID
		}
		if len(h) != 1440 {
			t.Fatalf("%s: %d rows, want 1,440", tc.job.Title, len(h))
		}
		var delivery string
		for i, u := range h {
			slot := restart.Truncate(time.Minute).Add(-time.Duration(i) * time.Minute) // newest first
			if !u.Slot.Equal(slot) || u.Attempt != 1 {
				t.Fatalf("%s: row %d is %v attempt %d, want %v: %+v", tc.job.Title, i, u.Slot, u.Attempt, slot, u)
			}
			if i == 0 {
				if got := u.Status + " " + u.Cause; got != tc.last {
					t.Errorf("%s: the newest is %s, want %s: %+v", tc.job.Title, got, tc.last, u)
				}
				if u.Status == Missed && u.Reason != "den was not running; the misfire policy is skip" {
					t.Errorf("%s: the newest missed says %q", tc.job.Title, u.Reason)
				}
				continue
			}
			if u.Status != Missed || u.Cause != CauseTime || u.Reason != "den was not running" || u.Ended == nil ||
				!u.Ended.Equal(restart) || u.Started != nil || u.Late != "" || u.Session != "" {
				t.Fatalf("%s: missed slot %v: %+v", tc.job.Title, slot, u)
			}
			if delivery == "" {
				delivery = u.Delivery
			}
			if u.Delivery != delivery || u.Delivery == DeliveryNone || u.Delivery == "" {
				t.Fatalf("%s: missed slot %v is told %q (others %q)", tc.job.Title, slot, u.Delivery, delivery)
			}
		}
	}
}

// catchUpEnv names the store a TestCatchUpChild process catches up on.
const catchUpEnv = "DEN_SCHEDULE_CATCHUP_STORE"

// catchUpJobs every-minute jobs (run-once, a 10 s grace) were added at
// day(0, 0); den starts again at catchUpAt: each has 1,440 times, the
// newest past its grace. 20 of them make two of plan's batches: 14
// jobs, then 6.
const catchUpJobs = 20

var catchUpAt = day(0, 0).Add(24*time.Hour + 30*time.Second)

// TestCatchUpChild is not a test: it is the process TestKillMidCatchUp
// starts and kills. It catches up on the store it is given, saying
// "catching up" first.
func TestCatchUpChild(t *testing.T) {
	path := os.Getenv(catchUpEnv)
	if path == "" {
		t.Skip("helper process of TestKillMidCatchUp")
	}
	st, err := store.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	clock := newClock(catchUpAt)
	e := New(Options{Store: st, Runner: &fakeRunner{}, Clock: clock, Owner: "child", MaxRunning: catchUpJobs})
	e.started = clock.Now()
	fmt.Println("catching up")
	if err := e.recover(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	e.tick(context.Background())
	e.wg.Wait()
	fmt.Println("caught up")
}

// TestKillMidCatchUp: den killed with SIGKILL during a catch-up (as it
// starts, and once its first batch is in), then started again: the
// next den finishes it. Each time of each job has one row, none twice
// and none missing; the newest ran once; each job's missed times are
// told in one note.
func TestKillMidCatchUp(t *testing.T) {
	if os.Getenv(catchUpEnv) != "" {
		t.Skip("in the helper process")
	}
	for _, after := range []int{0, planBatch} {
		t.Run(fmt.Sprintf("after%d", after), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "den.db")
			st, err := store.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			book := &Book{Store: st, Clock: newClock(day(0, 0))}
			for i := range catchUpJobs {
				if _, err := book.Add(context.Background(), "default", "user", Params{When: Spec{Every: "1m"},
					Grace: ptr(10 * time.Second), Prompt: ptr(fmt.Sprint("job ", i)), Deliver: ptr(DeliverNone)}); err != nil {
					t.Fatal(err)
				}
			}
			killCatchUp(t, st, path, int64(after))

			r := &rig{t: t, st: st, clock: newClock(catchUpAt), run: &fakeRunner{}, dlv: &fakeDeliverer{}}
			r.book = &Book{Store: st, Clock: r.clock}
			r.e = r.engine()
			if err := r.e.recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			r.settle()
			checkCaughtUp(t, st)
		})
	}
}

// killCatchUp starts TestCatchUpChild on path, waits until it has
// committed more than after rows (0: until it says it is catching up),
// kills it with SIGKILL.
func killCatchUp(t *testing.T, st *store.Store, path string, after int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCatchUpChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), catchUpEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill() // on early returns
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "catching up" {
		t.Fatalf("child said %q; stderr:\n%s", sc.Text(), stderr.String())
	}
	// Run ids count from 1 in a fresh store: run after+1 is in once
	// more than after rows are.
	for after > 0 {
		_, err := st.GetScheduleRun(context.Background(), after+1)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not killed; stderr:\n%s", err, stderr.String())
	}
}

// checkCaughtUp checks every job of TestKillMidCatchUp's store after
// the catch-up.
func checkCaughtUp(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	jobs, err := st.Schedules(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != catchUpJobs {
		t.Fatalf("%d jobs", len(jobs))
	}
	all, err := st.ScheduleRuns(ctx, store.RunQuery{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	byJob := map[int64][]store.ScheduleRun{}
	for _, u := range all {
		byJob[u.Schedule] = append(byJob[u.Schedule], u)
	}
	newest := catchUpAt.Truncate(time.Minute)
	for _, j := range jobs {
		runs := byJob[j.ID]
		seen := map[time.Time]bool{}
		deliveries := map[int64]bool{}
		ok := 0
		for _, u := range runs {
			if u.Attempt == 1 {
				if seen[u.Slot] {
					t.Fatalf("job %d: %v twice", j.ID, u.Slot)
				}
				seen[u.Slot] = true
			}
			switch {
			case u.Slot.Equal(newest) && u.Status == OK:
				ok++
			case u.Slot.Equal(newest) && u.Status == Interrupted && u.Attempt == 1:
				// killed during the run: attempt 2 is its retry
			case u.Status == Missed && u.Reason == "den was not running" && u.Delivery != 0:
				deliveries[u.Delivery] = true
			default:
				t.Fatalf("job %d: %+v", j.ID, u)
			}
		}
		for s := day(0, 1); !s.After(newest); s = s.Add(time.Minute) {
			if !seen[s] {
				t.Fatalf("job %d: no row for %v", j.ID, s)
			}
		}
		if len(seen) != 1440 || ok != 1 || len(deliveries) != 1 {
			t.Fatalf("job %d: %d times, %d ok runs of the newest, %d notes of missed times; want 1,440, 1 and 1",
				j.ID, len(seen), ok, len(deliveries))
		}
	}
}
