package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// The purposes of a model request.
const (
	PurposeConversation = "conversation" // a turn of the conversation
	PurposeCompaction   = "compaction"   // summarizing history to fit the context
)

// UsageRecord is what one model request consumed.
type UsageRecord struct {
	Session          string
	Model            string
	Purpose          string // PurposeConversation, PurposeCompaction, …
	InputTokens      int64  // not counting cache reads and writes
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUSD          float64       // stored rounded to the micro-dollar
	Latency          time.Duration // stored rounded down to the millisecond
	Time             time.Time     // when the request ended; zero means now
	// Breakdown shares the input tokens among the request's parts
	// (nil when not known).
	Breakdown map[string]int64
}

// Usage is a sum of usage records.
type Usage struct {
	Requests         int64
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUSD          float64 // a sum of micro-dollars, exact to 1e-6
}

// RecordUsage stores one request's usage and adds it to its session's
// totals, in one transaction.
func (s *Store) RecordUsage(ctx context.Context, r UsageRecord) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("store: record usage of session %s: %w", r.Session, err)
	}
	at := r.Time.UnixNano()
	micro := toMicros(r.CostUSD)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if r.Time.IsZero() {
			at = now()
		}
		var agent string
		err := tx.QueryRowContext(ctx, `SELECT agent FROM sessions WHERE id = ?`, r.Session).Scan(&agent)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage (agent, session_id, model, purpose, input_tokens,
			output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, latency_ms, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			agent, r.Session, r.Model, r.Purpose, r.InputTokens, r.OutputTokens, r.CacheReadTokens,
			r.CacheWriteTokens, micro, r.Latency.Milliseconds(), at); err != nil {
			return err
		}
		return touchSession(ctx, tx, r.Session, `requests = requests + 1, input_tokens = input_tokens + ?,
			output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,
			cache_write_tokens = cache_write_tokens + ?, cost_micro_usd = cost_micro_usd + ?`,
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, micro)
	})
	if err != nil {
		return fmt.Errorf("store: record usage of session %s: %w", r.Session, err)
	}
	return nil
}

func (r *UsageRecord) validate() error {
	switch {
	case r.Purpose == "":
		return errors.New("empty purpose")
	case r.InputTokens < 0 || r.OutputTokens < 0 || r.CacheReadTokens < 0 || r.CacheWriteTokens < 0:
		return errors.New("negative token count")
	case math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0) || r.CostUSD < 0 || r.CostUSD > math.MaxInt64/1e6:
		return fmt.Errorf("cost %v is not a valid amount", r.CostUSD)
	case r.Latency < 0:
		return errors.New("negative latency")
	}
	return nil
}

// SessionUsage returns a session's usage totals.
func (s *Store) SessionUsage(ctx context.Context, sessionID string) (Usage, error) {
	sess, err := s.GetSession(ctx, sessionID)
	if err != nil {
		return Usage{}, err
	}
	return sess.Usage, nil
}

// AgentUsage returns the sum of an agent's usage recorded at or after
// since (zero: all of it), deleted sessions included; agent "" sums
// every agent's.
func (s *Store) AgentUsage(ctx context.Context, agent string, since time.Time) (Usage, error) {
	var u Usage
	var micro int64
	where, args := byAgent(agent)
	err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
			coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0), coalesce(sum(cost_micro_usd), 0)
		FROM usage u WHERE `+where+` AND u.created_at >= ?`, append(args, sinceNanos(since))...).
		Scan(&u.Requests, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &micro)
	if err != nil {
		return Usage{}, fmt.Errorf("store: usage of agent %s: %w", agent, err)
	}
	u.CostUSD = fromMicros(micro)
	return u, nil
}

// byAgent is the condition that a usage row (as u) is agent's, or any
// agent's for "", and its arguments. For "" it names every agent rather
// than being always true, so that SQLite still reads a time range of
// usage_by_agent (agent, created_at), one agent after another.
func byAgent(agent string) (string, []any) {
	if agent == "" {
		return "u.agent IN (SELECT name FROM agents)", nil
	}
	return "u.agent = ?", []any{agent}
}

// sinceNanos is since as stored, or the earliest time for zero.
func sinceNanos(since time.Time) int64 {
	if since.IsZero() {
		return math.MinInt64
	}
	return since.UnixNano()
}

// CacheHitRate is the share of u's input served from the prompt cache:
// cache reads over all input tokens (uncached, cache reads and cache
// writes), from 0 to 1; 0 when there was no input.
func (u Usage) CacheHitRate() float64 {
	total := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if total <= 0 {
		return 0
	}
	return float64(u.CacheReadTokens) / float64(total)
}

// SessionTotal is one session's part of an agent's usage.
type SessionTotal struct {
	Session string // "": the agent's deleted sessions, together
	Title   string
	Usage
}

// AgentUsageBySession returns an agent's usage (agent "": every
// agent's) recorded at or after since (zero: all of it) summed per
// session, the sessions with the most input (uncached, cache reads and
// writes) first, ties newest first; at most limit of them (limit <= 0:
// all). The records of deleted sessions are summed as one, with
// Session "".
func (s *Store) AgentUsageBySession(ctx context.Context, agent string, since time.Time, limit int) ([]SessionTotal, error) {
	if limit <= 0 {
		limit = -1 // no limit, in SQLite
	}
	where, args := byAgent(agent)
	rows, err := s.db.QueryContext(ctx, `SELECT coalesce(u.session_id, ''), coalesce(max(s.title), ''), count(*),
			sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.cache_write_tokens),
			sum(u.cost_micro_usd)
		FROM usage u LEFT JOIN sessions s ON s.id = u.session_id
		WHERE `+where+` AND u.created_at >= ?
		GROUP BY u.session_id
		ORDER BY sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens) DESC, u.session_id DESC
		LIMIT ?`, append(args, sinceNanos(since), limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: usage of agent %s by session: %w", agent, err)
	}
	defer rows.Close()
	var list []SessionTotal
	for rows.Next() {
		var t SessionTotal
		var micro int64
		if err := rows.Scan(&t.Session, &t.Title, &t.Requests, &t.InputTokens, &t.OutputTokens,
			&t.CacheReadTokens, &t.CacheWriteTokens, &micro); err != nil {
			return nil, fmt.Errorf("store: usage of agent %s by session: %w", agent, err)
		}
		t.CostUSD = fromMicros(micro)
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: usage of agent %s by session: %w", agent, err)
	}
	return list, nil
}

func toMicros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }
func fromMicros(m int64) float64 { return float64(m) / 1e6 }
