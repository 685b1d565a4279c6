package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one published event: its id (increasing across every
// session, in the order events were stored), its session ("" for an
// event of no session), its type and time, and its fields as a JSON
// object without id, session_id and time.
type Event struct {
	ID      int64
	Session string
	Type    string
	Time    time.Time
	Data    json.RawMessage
}

// AddEvents stores evs in one transaction, in order, and returns them
// with their ids and times. They are written on the lazily synced pool:
// a killed den keeps them, a power cut may lose the last ones (which no
// face was shown yet, as faces are sent only stored events). An event
// of type "status" also sets its session's status, read from the
// event's "status" field.
func (s *Store) AddEvents(ctx context.Context, evs []Event) ([]Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	out := make([]Event, len(evs))
	err := s.mark(ctx, func(tx *sql.Tx) error {
		insert, err := tx.PrepareContext(ctx, `INSERT INTO events (session_id, type, time, data) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insert.Close()
		for i, e := range evs {
			if e.Time.IsZero() {
				e.Time = time.Now()
			}
			if len(e.Data) == 0 {
				e.Data = json.RawMessage("{}")
			}
			session := sql.NullString{String: e.Session, Valid: e.Session != ""}
			res, err := insert.ExecContext(ctx, session, e.Type, e.Time.UnixNano(), string(e.Data))
			if err != nil {
				return fmt.Errorf("event %d (%s): %w", i, e.Type, err)
			}
			if e.ID, err = res.LastInsertId(); err != nil {
				return err
			}
			e.Time = fromNanos(e.Time.UnixNano())
			out[i] = e
			if e.Type == "status" && e.Session != "" {
				var st struct {
					Status string `json:"status"`
				}
				if json.Unmarshal(e.Data, &st) == nil && st.Status != "" {
					if _, err := tx.ExecContext(ctx, `UPDATE sessions SET status = ? WHERE id = ?`, st.Status, e.Session); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: add events: %w", err)
	}
	return out, nil
}

// Events returns up to limit events after the id after, oldest first:
// those of session, or of every session when session is "". A limit of
// 0 or less means 1000.
func (s *Store) Events(ctx context.Context, session string, after int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		var rows *sql.Rows
		var err error
		if session == "" {
			rows, err = tx.QueryContext(ctx, `SELECT id, session_id, type, time, data FROM events WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
		} else {
			rows, err = tx.QueryContext(ctx, `SELECT id, session_id, type, time, data FROM events WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`,
				session, after, limit)
		}
		if err != nil {
			return err
		}
		out, err = scanEvents(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: events: %w", err)
	}
	return out, nil
}

// LastEventID is the id of the newest event, 0 when there is none.
// LastEventOf is the id of the session's newest event of type typ with
// an id of at most atMost, or 0 when there is none.
func (s *Store) LastEventOf(ctx context.Context, sessionID, typ string, atMost int64) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT id FROM events WHERE session_id = ? AND id <= ? AND type = ? ORDER BY id DESC LIMIT 1`,
		sessionID, atMost, typ).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: last %s event of session %s: %w", typ, sessionID, err)
	}
	return id, nil
}

func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(id) FROM events`).Scan(&id); err != nil {
		return 0, fmt.Errorf("store: last event: %w", err)
	}
	return id.Int64, nil
}

// scanEvents reads rows of (id, session_id, type, time, data) and
// closes them.
func scanEvents(rows *sql.Rows) ([]Event, error) {
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var sess sql.NullString
		var t int64
		var data string
		if err := rows.Scan(&e.ID, &sess, &e.Type, &t, &data); err != nil {
			return nil, err
		}
		e.Session, e.Time, e.Data = sess.String, fromNanos(t), json.RawMessage(data)
		out = append(out, e)
	}
	return out, rows.Err()
}
