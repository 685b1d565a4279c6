package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Summary is a compaction's result: in requests it stands for the
// session's messages up to and including UpToMessageID (on the current
// branch). Stored messages are never changed by it.
type Summary struct {
	ID            int64
	UpToMessageID string
	Text          string
	Model         string
	Compacted     int // how many messages it stands for
	Created       time.Time
}

// AddSummary stores a summary of a session's history.
func (s *Store) AddSummary(ctx context.Context, sessionID string, sum Summary) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO summaries (session_id, up_to, text, model, compacted, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			sessionID, sum.UpToMessageID, sum.Text, sum.Model, sum.Compacted, time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("store: add summary: %w", err)
	}
	return nil
}

// Summaries lists a session's summaries, oldest first.
func (s *Store) Summaries(ctx context.Context, sessionID string) ([]Summary, error) {
	var out []Summary
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, up_to, text, model, compacted, created_at FROM summaries WHERE session_id = ? ORDER BY id`, sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sum Summary
			var created int64
			if err := rows.Scan(&sum.ID, &sum.UpToMessageID, &sum.Text, &sum.Model, &sum.Compacted, &created); err != nil {
				return err
			}
			sum.Created = time.Unix(0, created)
			out = append(out, sum)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: summaries: %w", err)
	}
	return out, nil
}

// DeleteSummary removes one summary (undoing a compaction).
func (s *Store) DeleteSummary(ctx context.Context, sessionID string, id int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM summaries WHERE session_id = ? AND id = ?`, sessionID, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete summary: %w", err)
	}
	return nil
}
