package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"den.dev/den/internal/store"
)

// usageStore fills a store in g's data dir: agent "default" with a
// session that mostly read the cache, one that never did, and one with
// no usage at all.
func usageStore(t *testing.T, g *globals) (cached, cold, idle store.Session) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(g.dataDir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, s := range []*store.Session{&cached, &cold, &idle} {
		if *s, err = st.CreateSession(ctx, "default", "openrouter/anthropic/claude-sonnet-4.5"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetTitle(ctx, cached.ID, "Refactor the parser"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.UsageRecord{
		// The first request writes the cache, the second reads it:
		// 630 of 1000 input tokens read, 63%.
		{Session: cached.ID, InputTokens: 30, CacheWriteTokens: 270, OutputTokens: 40, CostUSD: 0.002},
		{Session: cached.ID, InputTokens: 70, CacheReadTokens: 630, OutputTokens: 60, CostUSD: 0.001},
		{Session: cold.ID, InputTokens: 500, OutputTokens: 10, CostUSD: 0.0015},
	} {
		r.Model, r.Purpose = "anthropic/claude-sonnet-4.5", store.PurposeConversation
		if err := st.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return cached, cold, idle
}

func TestUsageHitRate(t *testing.T) {
	g := &globals{dataDir: t.TempDir()}
	cached, cold, idle := usageStore(t, g)

	out, err := runSub(t, g, usageCmd, "--session", cached.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\n  cache hit rate  63%\n") || !strings.Contains(out, "\n  requests      2\n") {
		t.Errorf("session usage:\n%s", out)
	}
	out, err = runSub(t, g, usageCmd, "--session", idle.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\n  cache hit rate  -\n") {
		t.Errorf("usage of a session without requests:\n%s", out)
	}

	out, err = runSub(t, g, usageCmd, "--session", cached.ID, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]any{
		"requests": 2.0, "input_tokens": 100.0, "output_tokens": 100.0, "cache_read_tokens": 630.0,
		"cache_write_tokens": 270.0, "cache_hit_rate": 0.63, "cost_usd": 0.003,
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("session usage JSON (-want +got):\n%s", diff)
	}

	// The agent: 630 of 1500 input tokens read, 42%.
	out, err = runSub(t, g, usageCmd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "agent default\n") || !strings.Contains(out, "\n  cache hit rate  42%\n") {
		t.Errorf("agent usage:\n%s", out)
	}
	if strings.Contains(out, "SESSION") {
		t.Errorf("agent usage lists sessions without --by-session:\n%s", out)
	}
	out, err = runSub(t, g, usageCmd, "--json")
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if diff := cmp.Diff(0.42, got["cache_hit_rate"], approx); diff != "" || got["sessions"] != nil {
		t.Errorf("agent usage JSON: %s", out)
	}

	// --by-session: most input first, each with its rate.
	out, err = runSub(t, g, usageCmd, "--by-session")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+\$(\S+)\s*(.*)$`).FindAllStringSubmatch(out, -1)
	var table [][]string
	for _, r := range rows {
		table = append(table, r[1:])
	}
	wantTable := [][]string{
		{cached.ID, "2", "1000", "630", "63%", "0.0030", "Refactor the parser"},
		{cold.ID, "1", "500", "0", "0%", "0.0015", ""},
	}
	if diff := cmp.Diff(wantTable, table); diff != "" || !strings.Contains(out, "SESSION  ") {
		t.Errorf("den usage --by-session (-want +got):\n%s\n%s", diff, out)
	}
	out, err = runSub(t, g, usageCmd, "--by-session", "--limit", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var withSessions struct {
		CacheHitRate float64 `json:"cache_hit_rate"`
		Sessions     []struct {
			Session      string  `json:"session"`
			Title        string  `json:"title"`
			Requests     int64   `json:"requests"`
			CacheHitRate float64 `json:"cache_hit_rate"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &withSessions); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(withSessions.Sessions) != 1 || withSessions.Sessions[0].Session != cached.ID ||
		withSessions.Sessions[0].Title != "Refactor the parser" || withSessions.Sessions[0].CacheHitRate != 0.63 {
		t.Errorf("den usage --by-session --limit 1 --json: %s", out)
	}

	if _, err := runSub(t, g, usageCmd, "--by-session", "--session", cached.ID); !isUsage(err) {
		t.Errorf("--by-session with --session: err = %v, want a usage error", err)
	}
}
