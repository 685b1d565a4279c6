package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// EgressFilter chooses "egress" events: the connections of computers.
type EgressFilter struct {
	Agent   string // "" every agent's
	Session string // "" every session's; matches the event's session or the computer's session name (den exec's)
	Denied  bool   // only refused connections
	Before  int64  // only events with ids below; 0 from the newest
	Limit   int    // at most; 0 or less is 1000
}

// EgressEvents returns the "egress" events f chooses, newest first.
func (s *Store) EgressEvents(ctx context.Context, f EgressFilter) ([]Event, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	if f.Before <= 0 {
		f.Before = 1<<63 - 1
	}
	where := []string{"type = 'egress'", "id < ?"}
	args := []any{f.Before}
	if f.Agent != "" {
		where, args = append(where, "json_extract(data, '$.agent') = ?"), append(args, f.Agent)
	}
	if f.Session != "" {
		where, args = append(where, "(session_id = ? OR json_extract(data, '$.session') = ?)"), append(args, f.Session, f.Session)
	}
	if f.Denied {
		where = append(where, "json_extract(data, '$.allowed') = 0")
	}
	args = append(args, f.Limit)
	var out []Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, session_id, type, time, data FROM events WHERE `+strings.Join(where, " AND ")+` ORDER BY id DESC LIMIT ?`, args...)
		if err != nil {
			return err
		}
		out, err = scanEvents(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: egress events: %w", err)
	}
	return out, nil
}
