package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/llm"
)

// Queued is a message waiting for a session's next turn.
type Queued struct {
	ID          int64
	Session     string
	FromSession string // the session that sent it, "" for a person
	FromAgent   string // that session's agent, when it is another agent's
	Text        string
	// Parts, when set, are the message's parts (text and attachments);
	// otherwise the message is its Text.
	Parts []llm.Part
	// MessageID is the id the message takes in the history.
	MessageID string
	Created   time.Time
}

// Enqueue adds a text message for a session's next turn (see
// EnqueueMessage).
func (s *Store) Enqueue(ctx context.Context, sessionID, fromSession, text string) (Queued, error) {
	return s.EnqueueMessage(ctx, Queued{Session: sessionID, FromSession: fromSession, Text: text})
}

// EnqueueMessage adds q for its session's next turn: a running session
// takes it at its next turn boundary, an idle one when it next runs. It
// never interleaves with a turn in progress. The returned Queued has its
// id, its creation time and the id its message will have.
func (s *Store) EnqueueMessage(ctx context.Context, q Queued) (Queued, error) {
	var out Queued
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = enqueue(ctx, tx, q, now())
		return err
	})
	if err != nil {
		return Queued{}, fmt.Errorf("store: queue a message for session %s: %w", q.Session, err)
	}
	return out, nil
}

// enqueue adds q for its session's next turn at time t, in tx.
func enqueue(ctx context.Context, tx *sql.Tx, q Queued, t int64) (Queued, error) {
	var parts sql.NullString
	if len(q.Parts) > 0 {
		enc, err := encodeParts(q.Parts)
		if err != nil {
			return Queued{}, err
		}
		parts = sql.NullString{String: enc, Valid: true}
	}
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, q.Session).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return Queued{}, ErrNotFound
	} else if err != nil {
		return Queued{}, err
	}
	q.MessageID = newID(fromNanos(t))
	res, err := tx.ExecContext(ctx, `INSERT INTO queue (session_id, from_session, from_agent, text, parts, message_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		q.Session, q.FromSession, q.FromAgent, q.Text, parts, q.MessageID, t)
	if err != nil {
		return Queued{}, err
	}
	if q.ID, err = res.LastInsertId(); err != nil {
		return Queued{}, err
	}
	q.Created = fromNanos(t)
	return q, nil
}

// QueuedMessages returns the messages waiting for a session, oldest
// first.
func (s *Store) QueuedMessages(ctx context.Context, sessionID string) ([]Queued, error) {
	var out []Queued
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = queued(ctx, tx, sessionID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: queue of session %s: %w", sessionID, err)
	}
	return out, nil
}

// QueueDepth is how many messages wait in every session's queue.
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var n int
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM queue`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("store: queue depth: %w", err)
	}
	return n, nil
}

// SessionsWithQueue returns the sessions that have messages waiting.
func (s *Store) SessionsWithQueue(ctx context.Context) ([]string, error) {
	var out []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT session_id FROM queue ORDER BY session_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: sessions with a queue: %w", err)
	}
	return out, nil
}

// deliverQueued takes the messages waiting for a session, oldest
// first, inside the transaction that appends them (AppendOptions
// DeliverQueued): they leave the queue exactly when they enter the
// history.
func deliverQueued(ctx context.Context, tx *sql.Tx, sessionID string) ([]Queued, error) {
	out, err := queued(ctx, tx, sessionID)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM queue WHERE session_id = ? AND id <= ?`, sessionID, out[len(out)-1].ID)
	return out, err
}

// queued reads a session's queue, oldest first.
func queued(ctx context.Context, tx *sql.Tx, sessionID string) ([]Queued, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, from_session, from_agent, text, parts, message_id, created_at FROM queue WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Queued
	for rows.Next() {
		q := Queued{Session: sessionID}
		var t int64
		var parts, msgID sql.NullString
		if err := rows.Scan(&q.ID, &q.FromSession, &q.FromAgent, &q.Text, &parts, &msgID, &t); err != nil {
			return nil, err
		}
		if parts.Valid {
			if q.Parts, err = decodeParts(parts.String); err != nil {
				return nil, fmt.Errorf("queued message %d: %w", q.ID, err)
			}
		}
		q.MessageID, q.Created = msgID.String, fromNanos(t)
		out = append(out, q)
	}
	return out, rows.Err()
}

// QueuedText is how a queued message's text reads in the history.
func QueuedText(q Queued) string {
	if q.FromSession == "" {
		return q.Text
	}
	return fromLine(q) + "\n" + q.Text
}

// fromLine says where a queued message came from.
func fromLine(q Queued) string {
	if q.FromAgent != "" {
		return fmt.Sprintf("[message from agent %s, session %s]", q.FromAgent, q.FromSession)
	}
	return fmt.Sprintf("[message from session %s]", q.FromSession)
}

// message is q as the user message it becomes.
func (q Queued) message() llm.Message {
	if len(q.Parts) == 0 {
		return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: QueuedText(q)}}}
	}
	parts := append([]llm.Part(nil), q.Parts...)
	if q.FromSession != "" {
		parts = append([]llm.Part{&llm.Text{Text: fromLine(q)}}, parts...)
	}
	return llm.Message{Role: llm.User, Parts: parts}
}
