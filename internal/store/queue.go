package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Queued is a message waiting for a session's next turn.
type Queued struct {
	ID          int64
	Session     string
	FromSession string // the session that sent it, "" for a person
	Text        string
	Created     time.Time
}

// Enqueue adds a message for a session's next turn: a running session
// takes it at its next turn boundary, an idle one when it next runs. It
// never interleaves with a turn in progress.
func (s *Store) Enqueue(ctx context.Context, sessionID, fromSession, text string) (Queued, error) {
	q := Queued{Session: sessionID, FromSession: fromSession, Text: text}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		t := now()
		res, err := tx.ExecContext(ctx, `INSERT INTO queue (session_id, from_session, text, created_at) VALUES (?, ?, ?, ?)`,
			sessionID, fromSession, text, t)
		if err != nil {
			return err
		}
		q.ID, err = res.LastInsertId()
		q.Created = fromNanos(t)
		return err
	})
	if err != nil {
		return Queued{}, fmt.Errorf("store: queue a message for session %s: %w", sessionID, err)
	}
	return q, nil
}

// deliverQueued takes the messages waiting for a session, oldest
// first, inside the transaction that appends them (AppendOptions
// DeliverQueued): they leave the queue exactly when they enter the
// history.
func deliverQueued(ctx context.Context, tx *sql.Tx, sessionID string) ([]Queued, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, from_session, text, created_at FROM queue WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	var out []Queued
	for rows.Next() {
		q := Queued{Session: sessionID}
		var t int64
		if err := rows.Scan(&q.ID, &q.FromSession, &q.Text, &t); err != nil {
			rows.Close()
			return nil, err
		}
		q.Created = fromNanos(t)
		out = append(out, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM queue WHERE session_id = ? AND id <= ?`, sessionID, out[len(out)-1].ID)
	return out, err
}

// QueuedText is how a queued message reads in the history.
func QueuedText(q Queued) string {
	if q.FromSession == "" {
		return q.Text
	}
	return fmt.Sprintf("[message from session %s]\n%s", q.FromSession, q.Text)
}
