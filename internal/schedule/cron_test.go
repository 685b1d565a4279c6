package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustCron(t testing.TB, expr, tz string) When {
	t.Helper()
	w, err := ParseWhen(Cron, expr, tz, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// slots are the first n slots of w after from.
func slots(w When, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = w.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func fmtAll(ts []time.Time, loc *time.Location) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.In(loc).Format("2006-01-02 15:04 MST"))
	}
	return out
}

func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
		}
	}
}

// TestCronDST: in Europe/Berlin the clocks go from 02:00 to 03:00 on
// 29 March 2026 and from 03:00 back to 02:00 on 25 October 2026. A
// daily job at 02:30 runs at the jump in March (never skipped) and once
// in October; a job every quarter hour runs once at the jump for the
// skipped hour, and in both of October's 02:00 hours; a job at a fixed
// hour past 02:00 is untouched.
func TestCronDST(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	for _, tc := range []struct {
		name, expr string
		from       time.Time
		n          int
		want       []string
	}{
		{"daily in the skipped hour", "30 2 * * *", time.Date(2026, 3, 27, 12, 0, 0, 0, berlin), 4,
			[]string{"2026-03-28 02:30 CET", "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST"}},
		{"daily in the repeated hour", "30 2 * * *", time.Date(2026, 10, 24, 12, 0, 0, 0, berlin), 3,
			[]string{"2026-10-25 02:30 CEST", "2026-10-26 02:30 CET", "2026-10-27 02:30 CET"}},
		{"quarter hours over the jump", "*/15 * * * *", time.Date(2026, 3, 29, 1, 20, 0, 0, berlin), 4,
			[]string{"2026-03-29 01:30 CET", "2026-03-29 01:45 CET", "2026-03-29 03:00 CEST", "2026-03-29 03:15 CEST"}},
		{"quarter hours over the repeat", "*/15 * * * *", time.Date(2026, 10, 25, 1, 50, 0, 0, berlin), 10,
			[]string{"2026-10-25 02:00 CEST", "2026-10-25 02:15 CEST", "2026-10-25 02:30 CEST", "2026-10-25 02:45 CEST",
				"2026-10-25 02:00 CET", "2026-10-25 02:15 CET", "2026-10-25 02:30 CET", "2026-10-25 02:45 CET",
				"2026-10-25 03:00 CET", "2026-10-25 03:15 CET"}},
		{"a listed hour in the repeat runs once", "15 1-3 * * *", time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), 4,
			[]string{"2026-10-25 01:15 CEST", "2026-10-25 02:15 CEST", "2026-10-25 03:15 CET", "2026-10-26 01:15 CET"}},
		{"07:00 keeps its wall time across both changes", "0 7 * * *", time.Date(2026, 3, 28, 8, 0, 0, 0, berlin), 2,
			[]string{"2026-03-29 07:00 CEST", "2026-03-30 07:00 CEST"}},
		{"07:00 in October", "0 7 * * *", time.Date(2026, 10, 24, 8, 0, 0, 0, berlin), 2,
			[]string{"2026-10-25 07:00 CET", "2026-10-26 07:00 CET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCron(t, tc.expr, "Europe/Berlin")
			sameStrings(t, tc.expr, fmtAll(slots(w, tc.from, tc.n), berlin), tc.want)
		})
	}
	// An hour on the repeated day: 24 hours of moments and 25 runs.
	w := mustCron(t, "0 * * * *", "Europe/Berlin")
	day := slots(w, time.Date(2026, 10, 24, 23, 30, 0, 0, berlin), 25)
	if got := day[24].Sub(day[0]); got != 24*time.Hour {
		t.Errorf("25 hourly runs on 25 October span %v, want 24h: %q", got, fmtAll(day, berlin))
	}
}

// TestCronLeapDay: a job on 29 February runs only in leap years, and
// finds the one after 2096 in 2104 (2100 is no leap year).
func TestCronLeapDay(t *testing.T) {
	utc := time.UTC
	w := mustCron(t, "0 9 29 2 *", "UTC")
	sameStrings(t, "29 February", fmtAll(slots(w, time.Date(2026, 1, 1, 0, 0, 0, 0, utc), 3), utc),
		[]string{"2028-02-29 09:00 UTC", "2032-02-29 09:00 UTC", "2036-02-29 09:00 UTC"})
	sameStrings(t, "over 2100", fmtAll(slots(w, time.Date(2096, 3, 1, 0, 0, 0, 0, utc), 1), utc),
		[]string{"2104-02-29 09:00 UTC"})
	// The last day of February, whatever the year.
	w = mustCron(t, "0 12 28,29 2 *", "Pacific/Auckland")
	nz := zone(t, "Pacific/Auckland")
	sameStrings(t, "28 and 29 February", fmtAll(slots(w, time.Date(2027, 2, 27, 0, 0, 0, 0, nz), 3), nz),
		[]string{"2027-02-28 12:00 NZDT", "2028-02-28 12:00 NZDT", "2028-02-29 12:00 NZDT"})
	if _, err := (Spec{Cron: "0 0 30 2 *", TZ: "UTC"}).Resolve(time.Now()); err == nil {
		t.Error("an expression for 30 February was taken")
	}
}

// TestCronFields: cron's day rule (either day field when both are
// restricted), names, ranges, steps and descriptors.
func TestCronFields(t *testing.T) {
	utc := time.UTC
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, utc) // a Monday
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"0 9 13 * fri", []string{"2026-06-05 09:00 UTC", "2026-06-12 09:00 UTC", "2026-06-13 09:00 UTC"}},
		{"0 9 * * mon-fri", []string{"2026-06-01 09:00 UTC", "2026-06-02 09:00 UTC", "2026-06-03 09:00 UTC"}},
		{"30 */6 * jun *", []string{"2026-06-01 00:30 UTC", "2026-06-01 06:30 UTC", "2026-06-01 12:30 UTC"}},
		{"@daily", []string{"2026-06-02 00:00 UTC", "2026-06-03 00:00 UTC", "2026-06-04 00:00 UTC"}},
		{"@monthly", []string{"2026-07-01 00:00 UTC", "2026-08-01 00:00 UTC", "2026-09-01 00:00 UTC"}},
	} {
		sameStrings(t, tc.expr, fmtAll(slots(mustCron(t, tc.expr, "UTC"), from, 3), utc), tc.want)
	}
	for _, bad := range []string{"", "* * *", "61 * * * *", "@every 1h", "TZ=UTC 0 7 * * *", "0 0 7 * * *"} {
		if _, err := ParseWhen(Cron, bad, "UTC", time.Time{}); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// TestCronAgainstBruteForce checks next against a reading of its rules
// minute by minute, for random expressions in zones with hour and half
// hour changes of the clocks, around their changes.
func TestCronAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exprs := []string{"*/15 * * * *", "30 2 * * *", "0 * * * *", "45 1-3 * * *", "0,30 2 * * 0", "5 */2 * * *", "* 2 * * *", "0 0 * * *"}
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham", "Europe/Dublin"} {
		loc := zone(t, name)
		for i := 0; i < 60; i++ {
			expr := exprs[r.IntN(len(exprs))]
			w := mustCron(t, expr, name)
			// A moment near a change of the clocks in 2026.
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			_, end := start.ZoneBounds()
			if r.IntN(2) == 1 {
				_, end = end.ZoneBounds()
			}
			if end.IsZero() {
				t.Fatalf("%s has no change of the clocks in 2026", name)
			}
			from := end.Add(time.Duration(r.IntN(8*60)-4*60) * time.Minute).Add(time.Duration(r.IntN(60)) * time.Second)
			got := w.Next(from)
			want := bruteNext(w.cron, from)
			if !got.Equal(want) {
				t.Fatalf("%s in %s after %s: got %s, want %s", expr, name, from.In(loc).Format(time.RFC3339),
					got.In(loc).Format(time.RFC3339), want.In(loc).Format(time.RFC3339))
			}
		}
	}
}

// bruteNext walks the moments after from minute by minute: a moment is
// a slot when its wall time matches (the first time that wall time is
// read, or every time for an every-hour expression), or when the clocks
// jump at it over a wall time that matches.
func bruteNext(c *cronSpec, from time.Time) time.Time {
	matches := func(w time.Time) bool {
		return c.month&(1<<uint(w.Month())) != 0 && c.dayMatches(w) && c.hour&(1<<uint(w.Hour())) != 0 && c.minute&(1<<uint(w.Minute())) != 0
	}
	x := from.Truncate(time.Minute)
	for i := 0; i < 9*24*60; i++ {
		x = x.Add(time.Minute)
		if !x.After(from) {
			continue
		}
		w := naive(x.In(c.loc))
		prev := naive(x.Add(-time.Minute).In(c.loc))
		if matches(w) {
			// Read before, within the last hours?
			seen := false
			for back := time.Minute; back <= 3*time.Hour; back += time.Minute {
				if naive(x.Add(-back).In(c.loc)).Equal(w) {
					seen = true
				}
			}
			if !seen || c.hour&allHours == allHours {
				return x
			}
		}
		// A jump forward at x: the wall times between are skipped.
		if gap := w.Sub(prev); gap > time.Minute {
			for s := prev.Add(time.Minute); s.Before(w); s = s.Add(time.Minute) {
				if matches(s) {
					return x
				}
			}
		}
	}
	return time.Time{}
}

func BenchmarkCronNext(b *testing.B) {
	w := mustCron(b, "*/5 * * * *", "Europe/Berlin")
	t := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		t = w.Next(t)
	}
}
