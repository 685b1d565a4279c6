package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is one conversation of an agent.
type Session struct {
	ID      string
	Agent   string
	Title   string
	Model   string // the model new turns use, as configured ("provider/model")
	Created time.Time
	Updated time.Time // the last change to the session or its messages
	Head    string    // the current leaf message; "" before the first message
	Usage   Usage     // totals of the usage recorded for the session
	// Status is the last status published for the session (idle,
	// running, waiting, queued, interrupted, error).
	Status string
	// Parent is the session that started this one as a sub-agent ("":
	// none), Profile the sub-agent profile it runs with.
	Parent  string
	Profile string
}

// EnsureAgent creates the agent called name unless it exists.
func (s *Store) EnsureAgent(ctx context.Context, name string) error {
	if name == "" {
		return errors.New("store: ensure agent: empty name")
	}
	err := s.write(ctx, func(tx *sql.Tx) error { return ensureAgent(ctx, tx, name) })
	if err != nil {
		return fmt.Errorf("store: ensure agent %s: %w", name, err)
	}
	return nil
}

func ensureAgent(ctx context.Context, tx *sql.Tx, name string) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO agents (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, now())
	return err
}

// CreateSession starts an empty session of agent (created if needed)
// that uses model.
func (s *Store) CreateSession(ctx context.Context, agent, model string) (Session, error) {
	if agent == "" {
		return Session{}, errors.New("store: create session: empty agent name")
	}
	var sess Session
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := ensureAgent(ctx, tx, agent); err != nil {
			return err
		}
		t := now()
		sess = Session{ID: newID(fromNanos(t)), Agent: agent, Model: model, Created: fromNanos(t), Updated: fromNanos(t)}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO sessions (id, agent, model, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
			sess.ID, agent, model, t, t)
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("store: create session of %s: %w", agent, err)
	}
	return sess, nil
}

const sessionColumns = `id, agent, title, model, created_at, updated_at, coalesce(head, ''),
	requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, status,
	coalesce(parent, ''), profile`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var created, updated, micro int64
	err := row.Scan(&s.ID, &s.Agent, &s.Title, &s.Model, &created, &updated, &s.Head,
		&s.Usage.Requests, &s.Usage.InputTokens, &s.Usage.OutputTokens,
		&s.Usage.CacheReadTokens, &s.Usage.CacheWriteTokens, &micro, &s.Status, &s.Parent, &s.Profile)
	if err != nil {
		return Session{}, err
	}
	s.Created, s.Updated = fromNanos(created), fromNanos(updated)
	s.Usage.CostUSD = fromMicros(micro)
	return s, nil
}

// GetSession returns the session with the given id.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: get session %s: %w", id, err)
	}
	return sess, nil
}

// LatestSession returns agent's most recently updated session, the one
// --continue resumes.
func (s *Store) LatestSession(ctx context.Context, agent string) (Session, error) {
	sess, err := scanSession(s.db.QueryRowContext(ctx,
		`SELECT `+sessionColumns+` FROM sessions WHERE agent = ? ORDER BY updated_at DESC, id DESC LIMIT 1`, agent))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: latest session of %s: %w", agent, err)
	}
	return sess, nil
}

// ListSessions returns agent's sessions, most recently updated first, at
// most limit of them (all when limit <= 0). An empty agent lists the
// sessions of every agent.
func (s *Store) ListSessions(ctx context.Context, agent string, limit int) ([]Session, error) {
	if limit <= 0 {
		limit = -1 // no limit, in SQLite
	}
	where, args := "", []any{limit}
	if agent != "" {
		where, args = `WHERE agent = ?`, []any{agent, limit}
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+sessionColumns+` FROM sessions `+where+` ORDER BY updated_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list sessions of %q: %w", agent, err)
	}
	defer rows.Close()
	var list []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list sessions of %q: %w", agent, err)
		}
		list = append(list, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list sessions of %q: %w", agent, err)
	}
	return list, nil
}

// DeleteSession deletes a session with its messages and tool calls.
// Its usage records stay, detached, so the agent's totals still count
// what was spent.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("store: delete session %s: %w", id, err)
	}
	return nil
}

// SetTitle sets a session's title.
func (s *Store) SetTitle(ctx context.Context, id, title string) error {
	if err := s.updateSession(ctx, id, "title", title); err != nil {
		return fmt.Errorf("store: set title of session %s: %w", id, err)
	}
	return nil
}

// SetModel sets the model a session's next turns use.
func (s *Store) SetModel(ctx context.Context, id, model string) error {
	if err := s.updateSession(ctx, id, "model", model); err != nil {
		return fmt.Errorf("store: set model of session %s: %w", id, err)
	}
	return nil
}

// updateSession sets one column (a constant of this package, never
// user input) and the update time.
func (s *Store) updateSession(ctx context.Context, id, column, value string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		return touchSession(ctx, tx, id, column+` = ?`, value)
	})
}

// touchSession runs UPDATE sessions SET <set>, updated_at = … WHERE id,
// with args bound to set's placeholders. updated_at never goes back,
// even if the clock does. A missing session is ErrNotFound.
func touchSession(ctx context.Context, tx *sql.Tx, id, set string, args ...any) error {
	args = append(args, now(), id)
	res, err := tx.ExecContext(ctx,
		`UPDATE sessions SET `+set+`, updated_at = max(updated_at + 1, ?) WHERE id = ?`, args...)
	if err != nil {
		return err
	}
	return mustAffect(res)
}

// mustAffect turns an update or delete that matched no row into
// ErrNotFound.
func mustAffect(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// SessionsWithStatus returns the ids of the sessions whose last
// published status is one of statuses.
func (s *Store) SessionsWithStatus(ctx context.Context, statuses ...string) ([]string, error) {
	var out []string
	for _, st := range statuses {
		rows, err := s.db.QueryContext(ctx, `SELECT id FROM sessions WHERE status = ? ORDER BY id`, st)
		if err != nil {
			return nil, fmt.Errorf("store: sessions with status %s: %w", st, err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Agents lists the agents den knows, by name.
func (s *Store) Agents(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM agents ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: agents: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("store: agents: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
