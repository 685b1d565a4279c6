package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkAppend commits one turn per iteration: an assistant message
// with three tool calls and the user message with their three results,
// to one growing session, with a synced WAL commit each time.
func BenchmarkAppend(b *testing.B) {
	s := openTemp(b)
	sess := newSession(b, s, "bench")
	ctx := context.Background()
	msgs := turn("bench", 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, sess.ID, msgs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistory reads back a 100-turn session (200 messages).
func BenchmarkHistory(b *testing.B) {
	s := openTemp(b)
	sess := newSession(b, s, "bench")
	ctx := context.Background()
	for i := range 100 {
		mustAppend(b, s, sess.ID, turn(fmt.Sprint(i), 3)...)
	}
	b.ReportAllocs()
	for b.Loop() {
		h, err := s.History(ctx, sess.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(h) != 200 {
			b.Fatalf("%d messages", len(h))
		}
	}
}

// fillUsage stores perDay usage records a day for each of agents, over
// the days before end, spread evenly over each day, in one transaction.
func fillUsage(b *testing.B, s *Store, agents []string, days, perDay int, end time.Time) {
	b.Helper()
	ctx := context.Background()
	sessions := make([]Session, len(agents))
	for i, agent := range agents {
		sessions[i] = newSession(b, s, agent)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for j, agent := range agents {
			step := int64(24*time.Hour) / int64(perDay)
			at := end.Add(-time.Duration(days) * 24 * time.Hour).UnixNano()
			for i := range days * perDay {
				if _, err := tx.ExecContext(ctx, `INSERT INTO usage (agent, session_id, model, purpose, input_tokens,
					output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, latency_ms, created_at)
					VALUES (?, ?, 'm', 'conversation', 1000, 200, 5000, 100, 1234, 900, ?)`, agent, sessions[j].ID, at+int64(i)*step); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkUsageByDay sums 30 days of a busy agent (3000 requests a
// day; another agent as busy beside it) per day in Europe/Berlin, across
// a change to summer time, for the agent and for every agent: as
// UsageByDay does (a query per day), against grouping each span
// between offset changes by local day in SQLite, and against reading
// every record's time and finding its date in Go. All three must agree.
func BenchmarkUsageByDay(b *testing.B) {
	s := openTemp(b)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	end := time.Date(2026, 4, 10, 12, 0, 0, 0, loc)
	fillUsage(b, s, []string{"busy", "other"}, 30, 3000, end)
	since := end.Add(-30 * 24 * time.Hour)
	ctx := context.Background()
	for _, agent := range []string{"busy", ""} {
		var first []DayTotal
		for _, c := range []struct {
			name string
			f    func(context.Context, string, time.Time, *time.Location) ([]DayTotal, error)
		}{{"days", s.UsageByDay}, {"spans", s.usageBySpan}, {"scan", s.usageByScan}} {
			b.Run(fmt.Sprintf("%s/agent=%q", c.name, agent), func(b *testing.B) {
				var days []DayTotal
				for b.Loop() {
					if days, err = c.f(ctx, agent, since, loc); err != nil {
						b.Fatal(err)
					}
				}
				if first == nil {
					first = days
				} else if d := cmp.Diff(first, days); d != "" {
					b.Errorf("the ways disagree (-first +this):\n%s", d)
				}
			})
		}
		if len(first) != 31 {
			b.Errorf("%d days", len(first))
		}
	}
}

// usageBySpan is UsageByDay done by grouping each span between two of
// loc's offset changes by local day in SQLite: the local day is the
// stored time plus the offset, divided by 24 hours.
func (s *Store) usageBySpan(ctx context.Context, agent string, since time.Time, loc *time.Location) ([]DayTotal, error) {
	day := int64(24 * time.Hour)
	days := map[int64]*Usage{}
	micros := map[int64]int64{}
	where, args := byAgent(agent)
	err := s.read(ctx, func(tx *sql.Tx) error {
		for from := since; ; {
			_, offset := from.In(loc).Zone()
			_, next := from.In(loc).ZoneBounds()
			to := int64(math.MaxInt64)
			if !next.IsZero() && next.Before(time.Now()) {
				to = next.UnixNano()
			}
			rows, err := tx.QueryContext(ctx, `SELECT (u.created_at + ?) / ? AS day, count(*), sum(u.input_tokens), sum(u.output_tokens),
				sum(u.cache_read_tokens), sum(u.cache_write_tokens), sum(u.cost_micro_usd)
				FROM usage u WHERE `+where+` AND u.created_at >= ? AND u.created_at < ? GROUP BY day`,
				append([]any{int64(offset) * int64(time.Second), day}, append(args[:len(args):len(args)], from.UnixNano(), to)...)...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var d, micro int64
				var u Usage
				if err := rows.Scan(&d, &u.Requests, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &micro); err != nil {
					rows.Close()
					return err
				}
				if days[d] == nil {
					days[d] = &Usage{}
				}
				addUsage(days[d], u)
				micros[d] += micro
			}
			rows.Close()
			if err := rows.Err(); err != nil || to == math.MaxInt64 {
				return err
			}
			from = next
		}
	})
	out := make([]DayTotal, 0, len(days))
	for d, u := range days {
		u.CostUSD = fromMicros(micros[d])
		out = append(out, DayTotal{Day: time.Unix(d*day/int64(time.Second), 0).UTC().Format(time.DateOnly), Usage: *u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Day < out[j].Day })
	return out, err
}

// usageByScan is UsageByDay done by reading every record's time and
// finding its date in Go.
func (s *Store) usageByScan(ctx context.Context, agent string, since time.Time, loc *time.Location) ([]DayTotal, error) {
	where, args := byAgent(agent)
	rows, err := s.db.QueryContext(ctx, `SELECT u.created_at, u.input_tokens, u.output_tokens, u.cache_read_tokens,
		u.cache_write_tokens, u.cost_micro_usd FROM usage u WHERE `+where+` AND u.created_at >= ?`, append(args, since.UnixNano())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	days := map[string]*Usage{}
	micros := map[string]int64{}
	for rows.Next() {
		var at, micro int64
		u := Usage{Requests: 1}
		if err := rows.Scan(&at, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &micro); err != nil {
			return nil, err
		}
		d := time.Unix(0, at).In(loc).Format(time.DateOnly)
		if days[d] == nil {
			days[d] = &Usage{}
		}
		addUsage(days[d], u)
		micros[d] += micro
	}
	out := make([]DayTotal, 0, len(days))
	for d, u := range days {
		u.CostUSD = fromMicros(micros[d])
		out = append(out, DayTotal{Day: d, Usage: *u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Day < out[j].Day })
	return out, rows.Err()
}

func addUsage(sum *Usage, u Usage) {
	sum.Requests += u.Requests
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CacheReadTokens += u.CacheReadTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
}
