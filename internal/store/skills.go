package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// UseSkill records that session used the skill name (den saw the model
// read its SKILL.md, or the user asked for it). Recording it again
// keeps the first time.
func (s *Store) UseSkill(ctx context.Context, session, name string) error {
	if name == "" {
		return errors.New("store: use a skill: empty name")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, session).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO session_skills (session_id, name, since) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, session, name, now())
		return err
	})
	if err != nil {
		return fmt.Errorf("store: session %s uses skill %s: %w", session, name, err)
	}
	return nil
}

// SkillsUsed names the skills session has used, in the order it first
// used them.
func (s *Store) SkillsUsed(ctx context.Context, session string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM session_skills WHERE session_id = ? ORDER BY since, name`, session)
	if err != nil {
		return nil, fmt.Errorf("store: skills of session %s: %w", session, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("store: skills of session %s: %w", session, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: skills of session %s: %w", session, err)
	}
	return names, nil
}
