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
