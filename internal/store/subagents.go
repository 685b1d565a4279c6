package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CreateChild starts an empty session of agent that parent started as
// a sub-agent with profile ("" for none), and that uses model. With
// report, its answers join the parent's conversation, and the answer
// of its first run is owed (see SubagentState). The parent must exist;
// the agent is created if needed.
func (s *Store) CreateChild(ctx context.Context, parent, agent, model, profile string, report bool) (Session, error) {
	if agent == "" || parent == "" {
		return Session{}, errors.New("store: create a sub-agent session: empty agent or parent")
	}
	var sess Session
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, parent).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		if err := ensureAgent(ctx, tx, agent); err != nil {
			return err
		}
		t := now()
		sess = Session{ID: newID(fromNanos(t)), Agent: agent, Model: model, Created: fromNanos(t), Updated: fromNanos(t),
			Status: "idle", Parent: parent, Profile: profile}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO sessions (id, agent, model, created_at, updated_at, parent, profile, report, owed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sess.ID, agent, model, t, t, parent, profile, report, report)
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("store: create a sub-agent session of %s: %w", parent, err)
	}
	return sess, nil
}

// Subagents returns the sessions parent started as sub-agents, oldest
// first.
func (s *Store) Subagents(ctx context.Context, parent string) ([]Session, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+sessionColumns+` FROM sessions WHERE parent = ? ORDER BY created_at, id`, parent)
	if err != nil {
		return nil, fmt.Errorf("store: sub-agents of %s: %w", parent, err)
	}
	defer rows.Close()
	var list []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: sub-agents of %s: %w", parent, err)
		}
		list = append(list, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sub-agents of %s: %w", parent, err)
	}
	return list, nil
}

// DescendantUsage sums the usage totals of the sessions id started as
// sub-agents, theirs, and so on (not id's own).
func (s *Store) DescendantUsage(ctx context.Context, id string) (Usage, error) {
	var u Usage
	var micro int64
	err := s.db.QueryRowContext(ctx, `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent = ?
			UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id)
		SELECT coalesce(sum(requests), 0), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
			coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0), coalesce(sum(cost_micro_usd), 0)
		FROM sessions WHERE id IN tree`, id).
		Scan(&u.Requests, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &micro)
	if err != nil {
		return Usage{}, fmt.Errorf("store: usage of the sub-agents of %s: %w", id, err)
	}
	u.CostUSD = fromMicros(micro)
	return u, nil
}

// Inbox returns the agent's inbox: the session that messages from
// other agents join, made (with model) when the agent has none or its
// inbox was deleted. created says it was made now.
func (s *Store) Inbox(ctx context.Context, agent, model string) (sess Session, created bool, err error) {
	var id string
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := ensureAgent(ctx, tx, agent); err != nil {
			return err
		}
		var inbox sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT inbox FROM agents WHERE name = ?`, agent).Scan(&inbox); err != nil {
			return err
		}
		if inbox.Valid {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, inbox.String).Scan(&one)
			if err == nil {
				id = inbox.String
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		t := now()
		id, created = newID(fromNanos(t)), true
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, agent, title, model, created_at, updated_at) VALUES (?, ?, 'Inbox', ?, ?, ?)`,
			id, agent, model, t, t); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE agents SET inbox = ? WHERE name = ?`, id, agent)
		return err
	})
	if err != nil {
		return Session{}, false, fmt.Errorf("store: inbox of %s: %w", agent, err)
	}
	sess, err = s.GetSession(ctx, id)
	return sess, created, err
}

// DropQueued removes the messages waiting for a session, and says how
// many there were.
func (s *Store) DropQueued(ctx context.Context, sessionID string) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM queue WHERE session_id = ?`, sessionID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: drop the queue of session %s: %w", sessionID, err)
	}
	return int(n), nil
}
