package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/store"
)

// TestUsage: an agent's usage (every agent's without ?agent=) summed,
// per day in a time zone, and per session; bad parameters are 400.
func TestUsage(t *testing.T) {
	a := newAPI(t, "", nil)
	ctx := context.Background()
	ada1, err := a.st.CreateSession(ctx, "ada", "m")
	if err != nil {
		t.Fatal(err)
	}
	ada2, err := a.st.CreateSession(ctx, "ada", "m")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := a.st.CreateSession(ctx, "bob", "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.st.SetTitle(ctx, ada2.ID, "Long one"); err != nil {
		t.Fatal(err)
	}
	recent := time.Now().Add(-2 * time.Hour)
	for _, r := range []store.UsageRecord{
		// Berlin 23:30 CEST on 29 March 2026, the day after summer time
		// began; 21:30 on the 29th in UTC.
		{Session: ada1.ID, InputTokens: 1, Time: time.Date(2026, 3, 29, 21, 30, 0, 0, time.UTC)},
		// Berlin 00:30 CEST on 30 March; 22:30 on the 29th in UTC.
		{Session: ada2.ID, InputTokens: 10, Time: time.Date(2026, 3, 29, 22, 30, 0, 0, time.UTC)},
		{Session: ada2.ID, InputTokens: 100, Time: recent},
		{Session: bob.ID, InputTokens: 1000, Time: recent},
	} {
		r.Model, r.Purpose, r.OutputTokens, r.CostUSD = "m", store.PurposeConversation, 1, float64(r.InputTokens)/100
		if err := a.st.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	u := func(n, in int64) usageJSON {
		return usageJSON{Requests: n, InputTokens: in, OutputTokens: n, CostUSD: float64(in) / 100}
	}

	var total struct {
		Agent string    `json:"agent"`
		Usage usageJSON `json:"usage"`
	}
	a.call("GET", "/api/v1/usage", "", http.StatusOK, &total)
	if total.Agent != "" || total.Usage != u(4, 1111) {
		t.Errorf("every agent's usage: %+v", total)
	}
	a.call("GET", "/api/v1/usage?agent=ada&since=24h", "", http.StatusOK, &total)
	if total.Agent != "ada" || total.Usage != u(1, 100) {
		t.Errorf("ada's usage of the last day: %+v", total)
	}

	type day struct {
		Day string `json:"day"`
		usageJSON
	}
	var days struct {
		Agent string `json:"agent"`
		TZ    string `json:"tz"`
		Days  []day  `json:"days"`
	}
	today := func(loc *time.Location) string { return recent.In(loc).Format(time.DateOnly) }
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("install tzdata: %v", err)
	}
	for _, c := range []struct {
		query string
		tz    string
		want  []day
	}{
		{"by=day&agent=ada&tz=Europe/Berlin", "Europe/Berlin", []day{{"2026-03-29", u(1, 1)}, {"2026-03-30", u(1, 10)}, {today(berlin), u(1, 100)}}},
		{"by=day&agent=ada", "UTC", []day{{"2026-03-29", u(2, 11)}, {today(time.UTC), u(1, 100)}}},
		{"by=day&since=720h&tz=Europe/Berlin", "Europe/Berlin", []day{{today(berlin), u(2, 1100)}}},
		{"by=day&agent=carol&since=720h", "UTC", []day{}},
	} {
		days.Days = nil
		a.call("GET", "/api/v1/usage?"+c.query, "", http.StatusOK, &days)
		if d := cmp.Diff(c.want, days.Days, cmp.AllowUnexported(day{})); d != "" || days.TZ != c.tz {
			t.Errorf("%s: tz %q, days (-want +got):\n%s", c.query, days.TZ, d)
		}
	}

	type sess struct {
		Session string `json:"session_id"`
		Title   string `json:"title"`
		usageJSON
	}
	var sessions struct {
		Agent    string `json:"agent"`
		Sessions []sess `json:"sessions"`
	}
	for _, c := range []struct {
		query string
		want  []sess
	}{
		{"by=session&agent=ada", []sess{{ada2.ID, "Long one", u(2, 110)}, {ada1.ID, "", u(1, 1)}}},
		{"by=session&agent=ada&limit=1", []sess{{ada2.ID, "Long one", u(2, 110)}}},
		{"by=session&since=720h", []sess{{bob.ID, "", u(1, 1000)}, {ada2.ID, "Long one", u(1, 100)}}},
	} {
		a.call("GET", "/api/v1/usage?"+c.query, "", http.StatusOK, &sessions)
		if d := cmp.Diff(c.want, sessions.Sessions, cmp.AllowUnexported(sess{})); d != "" {
			t.Errorf("%s: sessions (-want +got):\n%s", c.query, d)
		}
	}

	for _, q := range []string{
		"by=day&tz=Mars/Olympus", "by=day&tz=Local", "by=day&tz=../../etc/passwd", "by=day&since=yesterday",
		"by=day&since=-24h", "since=0s", "by=week", "by=session&limit=0", "by=session&limit=501", "by=session&limit=x",
		"session=" + ada1.ID + "&by=day",
	} {
		a.fails("GET", "/api/v1/usage?"+q, "", http.StatusBadRequest, "bad_request")
	}
}
