package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Versions returns, for each of ids that has siblings (messages with the
// same parent in its session: the versions a regenerate or an edit
// made), the ids of all of them, oldest first. Messages without
// siblings are left out.
func (s *Store) Versions(ctx context.Context, sessionID string, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
		args := []any{sessionID, sessionID}
		for _, id := range ids {
			args = append(args, id)
		}
		// Siblings share a parent; roots (no parent) are siblings too.
		rows, err := tx.QueryContext(ctx, `
			SELECT m.id, s.id FROM messages m JOIN messages s
				ON s.session_id = ? AND (s.parent_id = m.parent_id OR (s.parent_id IS NULL AND m.parent_id IS NULL))
			WHERE m.session_id = ? AND m.id IN (`+marks+`)
			ORDER BY m.id, s.created_at, s.rowid`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, sib string
			if err := rows.Scan(&id, &sib); err != nil {
				return err
			}
			out[id] = append(out[id], sib)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: versions in session %s: %w", sessionID, err)
	}
	for id, sibs := range out {
		if len(sibs) < 2 {
			delete(out, id)
		}
	}
	return out, nil
}

// Leaf is the end of the newest branch below messageID: its newest
// child's newest child, and so on (messageID itself when it has none).
// Moving the head there shows that version of the conversation whole.
func (s *Store) Leaf(ctx context.Context, sessionID, messageID string) (string, error) {
	var leaf string
	err := s.read(ctx, func(tx *sql.Tx) error {
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT session_id FROM messages WHERE id = ?`, messageID).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) || err == nil && owner != sessionID {
			return fmt.Errorf("message %s of this session: %w", messageID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		leaf = messageID
		for {
			var next string
			err := tx.QueryRowContext(ctx, `SELECT id FROM messages WHERE session_id = ? AND parent_id = ?
				ORDER BY created_at DESC, rowid DESC LIMIT 1`, sessionID, leaf).Scan(&next)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			leaf = next
		}
	})
	if err != nil {
		return "", fmt.Errorf("store: leaf below %s: %w", messageID, err)
	}
	return leaf, nil
}
