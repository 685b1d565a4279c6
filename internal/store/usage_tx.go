package store

import (
	"context"
	"database/sql"
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage (agent, session_id, model, purpose, input_tokens,
		output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, latency_ms, created_at, message_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		agent, r.Session, r.Model, r.Purpose, r.InputTokens, r.OutputTokens, r.CacheReadTokens,
		r.CacheWriteTokens, micro, r.Latency.Milliseconds(), at, msg); err != nil {
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
