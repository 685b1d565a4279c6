package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// EventsOfType returns up to limit events of type typ, of every session
// and of none, newest first, with ids below before (0: from the
// newest). A limit of 0 or less means 1000.
func (s *Store) EventsOfType(ctx context.Context, typ string, before int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	var out []Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, session_id, type, time, data FROM events WHERE type = ? AND id < ? ORDER BY id DESC LIMIT ?`,
			typ, before, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e Event
			var sess sql.NullString
			var t int64
			var data string
			if err := rows.Scan(&e.ID, &sess, &e.Type, &t, &data); err != nil {
				return err
			}
			e.Session, e.Time, e.Data = sess.String, fromNanos(t), json.RawMessage(data)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s events: %w", typ, err)
	}
	return out, nil
}
