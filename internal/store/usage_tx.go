package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// insertUsage stores one request's usage, for the assistant message
// messageID ("" for none), and adds it to its session's totals, in tx.
func insertUsage(ctx context.Context, tx *sql.Tx, r UsageRecord, messageID string) error {
	if err := r.validate(); err != nil {
		return err
	}
	at := r.Time.UnixNano()
	if r.Time.IsZero() {
		at = now()
	}
	micro := toMicros(r.CostUSD)
	var agent string
	err := tx.QueryRowContext(ctx, `SELECT agent FROM sessions WHERE id = ?`, r.Session).Scan(&agent)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var msg sql.NullString
	if messageID != "" {
		msg = sql.NullString{String: messageID, Valid: true}
	}
	var breakdown sql.NullString
	if len(r.Breakdown) > 0 {
		b, err := json.Marshal(r.Breakdown)
		if err != nil {
			return err
		}
		breakdown = sql.NullString{String: string(b), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage (agent, session_id, model, purpose, input_tokens,
		output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, latency_ms, created_at, message_id, breakdown)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		agent, r.Session, r.Model, r.Purpose, r.InputTokens, r.OutputTokens, r.CacheReadTokens,
		r.CacheWriteTokens, micro, r.Latency.Milliseconds(), at, msg, breakdown); err != nil {
		return err
	}
	return touchSession(ctx, tx, r.Session, `requests = requests + 1, input_tokens = input_tokens + ?,
		output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,
		cache_write_tokens = cache_write_tokens + ?, cost_micro_usd = cost_micro_usd + ?`,
		r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, micro)
}

// MessageUsage returns, for a session, the usage of each request that
// produced an assistant message, by the message's id.
func (s *Store) MessageUsage(ctx context.Context, sessionID string) (map[string]UsageRecord, error) {
	out := map[string]UsageRecord{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT message_id, model, purpose, input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, cost_micro_usd, latency_ms, created_at FROM usage WHERE session_id = ? AND message_id IS NOT NULL`, sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := UsageRecord{Session: sessionID}
			var id string
			var micro, ms, at int64
			if err := rows.Scan(&id, &r.Model, &r.Purpose, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens,
				&r.CacheWriteTokens, &micro, &ms, &at); err != nil {
				return err
			}
			r.CostUSD, r.Latency, r.Time = fromMicros(micro), time.Duration(ms)*time.Millisecond, fromNanos(at)
			out[id] = r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage of session %s by message: %w", sessionID, err)
	}
	return out, nil
}

// SessionBreakdown returns how a session's requests were made up: the
// input tokens of every request that has a breakdown, summed by part,
// and the breakdown of the latest one with its time.
func (s *Store) SessionBreakdown(ctx context.Context, sessionID string) (total, last map[string]int64, at time.Time, err error) {
	total, last = map[string]int64{}, map[string]int64{}
	rows, err := s.db.QueryContext(ctx, `SELECT breakdown, created_at FROM usage WHERE session_id = ? AND breakdown IS NOT NULL ORDER BY created_at, id`, sessionID)
	if err != nil {
		return nil, nil, at, fmt.Errorf("store: breakdown of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var b string
		var t int64
		if err := rows.Scan(&b, &t); err != nil {
			return nil, nil, at, fmt.Errorf("store: breakdown of session %s: %w", sessionID, err)
		}
		one := map[string]int64{}
		if err := json.Unmarshal([]byte(b), &one); err != nil {
			continue
		}
		for k, v := range one {
			total[k] += v
		}
		last, at = one, fromNanos(t)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, at, fmt.Errorf("store: breakdown of session %s: %w", sessionID, err)
	}
	return total, last, at, nil
}
