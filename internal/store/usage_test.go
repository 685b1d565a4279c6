package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCacheHitRate(t *testing.T) {
	for _, tc := range []struct {
		u    Usage
		want float64
	}{
		{Usage{}, 0},
		{Usage{OutputTokens: 10}, 0},
		{Usage{InputTokens: 100}, 0},
		{Usage{CacheReadTokens: 100}, 1},
		{Usage{InputTokens: 100, CacheReadTokens: 630, CacheWriteTokens: 270}, 0.63},
	} {
		if got := tc.u.CacheHitRate(); got != tc.want {
			t.Errorf("%+v: CacheHitRate() = %v, want %v", tc.u, got, tc.want)
		}
	}
}

func TestAgentUsageBySession(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	small := newSession(t, s, "ada")
	big := newSession(t, s, "ada")
	gone := newSession(t, s, "ada")
	other := newSession(t, s, "bob")
	if err := s.SetTitle(ctx, big.ID, "Big"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, r := range []UsageRecord{
		{Session: small.ID, InputTokens: 10, OutputTokens: 1, CostUSD: 0.01, Time: t0},
		{Session: big.ID, InputTokens: 100, CacheWriteTokens: 900, OutputTokens: 5, CostUSD: 0.5, Time: t0},
		{Session: big.ID, InputTokens: 50, CacheReadTokens: 900, CacheWriteTokens: 50, OutputTokens: 5, CostUSD: 0.1, Time: t0.Add(time.Hour)},
		{Session: gone.ID, InputTokens: 20, CacheReadTokens: 20, CostUSD: 0.02, Time: t0},
		{Session: other.ID, InputTokens: 1_000_000, Time: t0},
	} {
		r.Model, r.Purpose = "m", PurposeConversation
		if err := s.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.AgentUsageBySession(ctx, "ada", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []SessionTotal{
		{Session: big.ID, Title: "Big", Usage: Usage{Requests: 2, InputTokens: 150, OutputTokens: 10, CacheReadTokens: 900, CacheWriteTokens: 950, CostUSD: 0.6}},
		{Session: "", Usage: Usage{Requests: 1, InputTokens: 20, CacheReadTokens: 20, CostUSD: 0.02}},
		{Session: small.ID, Usage: Usage{Requests: 1, InputTokens: 10, OutputTokens: 1, CostUSD: 0.01}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AgentUsageBySession(ada) (-want +got):\n%s", diff)
	}
	// The parts add up to AgentUsage.
	total, err := s.AgentUsage(ctx, "ada", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var sum Usage
	for _, st := range got {
		sum.Requests += st.Requests
		sum.InputTokens += st.InputTokens
		sum.OutputTokens += st.OutputTokens
		sum.CacheReadTokens += st.CacheReadTokens
		sum.CacheWriteTokens += st.CacheWriteTokens
		sum.CostUSD += st.CostUSD
	}
	if diff := cmp.Diff(total, sum, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("per-session sums differ from AgentUsage (-total +sum):\n%s", diff)
	}

	got, err = s.AgentUsageBySession(ctx, "ada", t0.Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Session != big.ID || got[0].Requests != 1 || got[0].CacheReadTokens != 900 {
		t.Errorf("since +1h: %+v", got)
	}
	got, err = s.AgentUsageBySession(ctx, "ada", time.Time{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Session != big.ID {
		t.Errorf("limit 1: %+v", got)
	}
	if got, err := s.AgentUsageBySession(ctx, "nobody", time.Time{}, 0); err != nil || len(got) != 0 {
		t.Errorf("unknown agent: %+v, %v", got, err)
	}
}

// TestUsageByDay: records count on their local date in the zone asked
// for, across changes to and from summer time (days of 23 and 25
// hours) and where a change skips midnight; days without usage are
// left out; since and the agent filter hold, agent "" is every agent.
func TestUsageByDay(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	ada := newSession(t, s, "ada")
	bob := newSession(t, s, "bob")
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	records := []struct {
		sess *Session
		at   time.Time
		in   int64
	}{
		{&ada, utc(2026, 3, 28, 21, 30), 1},   // Berlin 22:30 CET, 28 March; Beirut 23:30 EET, 28 March
		{&ada, utc(2026, 3, 28, 22, 30), 2},   // Berlin 23:30 CET, 28 March; Beirut 01:30 EEST, 29 March (00:00-01:00 skipped)
		{&ada, utc(2026, 3, 28, 23, 30), 4},   // Berlin 00:30 CET, 29 March
		{&ada, utc(2026, 3, 29, 21, 30), 8},   // Berlin 23:30 CEST, 29 March: the 23-hour day
		{&ada, utc(2026, 3, 29, 22, 30), 16},  // Berlin 00:30 CEST, 30 March
		{&ada, utc(2026, 10, 24, 22, 30), 32}, // Berlin 00:30 CEST, 25 October
		{&ada, utc(2026, 10, 25, 22, 30), 64}, // Berlin 23:30 CET, 25 October: the 25-hour day
		{&bob, utc(2026, 3, 29, 12, 0), 128},
	}
	for _, r := range records {
		if err := s.RecordUsage(ctx, UsageRecord{Session: r.sess.ID, Model: "m", Purpose: PurposeConversation,
			InputTokens: r.in, OutputTokens: 1, CacheReadTokens: 2, CacheWriteTokens: 3, CostUSD: float64(r.in) / 1e6, Time: r.at}); err != nil {
			t.Fatal(err)
		}
	}
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatalf("time zone %s: %v (install tzdata)", name, err)
		}
		return loc
	}
	day := func(d string, n int64, in int64) DayTotal {
		return DayTotal{Day: d, Usage: Usage{Requests: n, InputTokens: in, OutputTokens: n, CacheReadTokens: 2 * n, CacheWriteTokens: 3 * n, CostUSD: float64(in) / 1e6}}
	}
	for _, c := range []struct {
		name  string
		agent string
		since time.Time
		loc   *time.Location
		want  []DayTotal
	}{
		{"Berlin", "ada", time.Time{}, zone("Europe/Berlin"), []DayTotal{
			day("2026-03-28", 2, 1+2), day("2026-03-29", 2, 4+8), day("2026-03-30", 1, 16), day("2026-10-25", 2, 32+64)}},
		{"UTC", "ada", time.Time{}, time.UTC, []DayTotal{
			day("2026-03-28", 3, 1+2+4), day("2026-03-29", 2, 8+16), day("2026-10-24", 1, 32), day("2026-10-25", 1, 64)}},
		{"a skipped midnight", "ada", utc(2026, 3, 1, 0, 0), zone("Asia/Beirut"), []DayTotal{
			day("2026-03-28", 1, 1), day("2026-03-29", 2, 2+4), day("2026-03-30", 2, 8+16), day("2026-10-25", 1, 32), day("2026-10-26", 1, 64)}},
		{"since counts from since, not from its day's midnight", "ada", utc(2026, 3, 28, 22, 0), zone("Europe/Berlin"), []DayTotal{
			day("2026-03-28", 1, 2), day("2026-03-29", 2, 4+8), day("2026-03-30", 1, 16), day("2026-10-25", 2, 32+64)}},
		{"every agent", "", utc(2026, 3, 29, 0, 0), zone("Europe/Berlin"), []DayTotal{
			day("2026-03-29", 2, 8+128), day("2026-03-30", 1, 16), day("2026-10-25", 2, 32+64)}},
		{"another agent", "bob", time.Time{}, time.UTC, []DayTotal{day("2026-03-29", 1, 128)}},
		{"an agent without usage", "carol", time.Time{}, time.UTC, nil},
		{"nothing since", "ada", utc(2026, 10, 26, 0, 0), time.UTC, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.UsageByDay(ctx, c.agent, c.since, c.loc)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("UsageByDay (-want +got):\n%s", d)
			}
		})
	}
}

// TestUsageOfEveryAgent: agent "" sums every agent's usage, as the
// API's usage without ?agent= shows it.
func TestUsageOfEveryAgent(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for i, agent := range []string{"ada", "bob"} {
		sess := newSession(t, s, agent)
		if err := s.RecordUsage(ctx, UsageRecord{Session: sess.ID, Model: "m", Purpose: PurposeConversation, InputTokens: int64(10 + i), CostUSD: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	u, err := s.AgentUsage(ctx, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if u.Requests != 2 || u.InputTokens != 21 || u.CostUSD != 1 {
		t.Errorf("AgentUsage(\"\") = %+v", u)
	}
	list, err := s.AgentUsageBySession(ctx, "", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].InputTokens != 11 || list[1].InputTokens != 10 {
		t.Errorf("AgentUsageBySession(\"\") = %+v", list)
	}
}
