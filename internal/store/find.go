package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SessionQuery picks sessions for a list: an agent's ("" for all),
// those whose title or messages match Text (full-text, every word must
// appear; the last may be the start of a word), older than the session
// Before ("" for the newest), at most Limit (0: 50).
type SessionQuery struct {
	Agent  string
	Text   string
	Before string
	Limit  int
}

// FindSessions lists sessions by q, the most recently updated first.
func (s *Store) FindSessions(ctx context.Context, q SessionQuery) ([]Session, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	var where []string
	var args []any
	if q.Agent != "" {
		where, args = append(where, `agent = ?`), append(args, q.Agent)
	}
	if q.Before != "" {
		var at int64
		err := s.db.QueryRowContext(ctx, `SELECT updated_at FROM sessions WHERE id = ?`, q.Before).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: find sessions before %q: %w", q.Before, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("store: find sessions: %w", err)
		}
		where = append(where, `(updated_at < ? OR (updated_at = ? AND id < ?))`)
		args = append(args, at, at, q.Before)
	}
	if match := ftsQuery(q.Text); match != "" {
		where = append(where, `(id IN (SELECT session_id FROM message_text WHERE message_text MATCH ?) OR title LIKE ? ESCAPE '\')`)
		args = append(args, match, "%"+likeEscape(strings.TrimSpace(q.Text))+"%")
	}
	query := `SELECT ` + sessionColumns + ` FROM sessions`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: find sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: find sessions: %w", err)
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// ftsQuery turns a person's words into an FTS5 query: each word quoted
// (so no word is taken for query syntax), all required, the last one a
// prefix.
func ftsQuery(text string) string {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	if len(words) == 0 {
		return ""
	}
	words[len(words)-1] += "*"
	return strings.Join(words, " ")
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// PathPage returns up to limit messages of the session's current path
// ending just before the message before ("" for the head, included),
// oldest first, and whether older messages remain. A limit of 0 or less
// means 50.
func (s *Store) PathPage(ctx context.Context, sessionID, before string, limit int) ([]StoredMessage, bool, error) {
	if limit <= 0 {
		limit = 50
	}
	var page []StoredMessage
	more := false
	err := s.read(ctx, func(tx *sql.Tx) error {
		head, err := sessionHead(ctx, tx, sessionID)
		if err != nil || !head.Valid {
			return err
		}
		start := head.String
		if before != "" {
			var parent sql.NullString
			err := tx.QueryRowContext(ctx, `SELECT parent_id FROM messages WHERE id = ? AND session_id = ?`, before, sessionID).Scan(&parent)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("message %q of the session: %w", before, ErrNotFound)
			}
			if err != nil || !parent.Valid {
				return err
			}
			start = parent.String
		}
		page, err = queryMessages(ctx, tx, `
			WITH RECURSIVE up(id, depth) AS (
				SELECT ?, 0
				UNION ALL
				SELECT m.parent_id, up.depth + 1 FROM up JOIN messages m ON m.id = up.id
				WHERE m.parent_id IS NOT NULL AND up.depth < ?
			)
			SELECT `+messageColumns+` FROM up JOIN messages m ON m.id = up.id ORDER BY up.depth DESC`, start, limit)
		if err != nil {
			return err
		}
		if len(page) > limit {
			page, more = page[1:], true
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: messages of session %s: %w", sessionID, err)
	}
	return page, more, nil
}

// MessageHit is a message a search found, with a snippet of its text
// around the words (marked [like this]).
type MessageHit struct {
	Session, Title, Message string
	Snippet                 string
	Updated                 time.Time // the session's last change
}

// SearchMessages finds the messages of agent's sessions ("" for every
// agent's) that hold every word of text (the last one also as the
// start of a word), the best match first; at most one hit a session,
// and at most limit sessions (0: 20). It reads the full-text index of
// every message, not only titles.
func (s *Store) SearchMessages(ctx context.Context, agent, text string, limit int) ([]MessageHit, error) {
	if limit <= 0 {
		limit = 20
	}
	match := ftsQuery(text)
	if match == "" {
		return nil, nil
	}
	// The full-text index ranks alone (FTS5 then keeps only the best
	// rows as it goes), its rows then joined to their messages and
	// sessions; more rows than sessions wanted, as several may be of
	// one session.
	inner := `SELECT rowid, session_id, snippet(message_text, 0, '[', ']', '…', 16) AS snip, rank AS r FROM message_text WHERE message_text MATCH ?`
	args := []any{match}
	if agent != "" {
		inner += ` AND session_id IN (SELECT id FROM sessions WHERE agent = ?)`
		args = append(args, agent)
	}
	inner += ` ORDER BY rank LIMIT ?`
	args = append(args, limit*8)
	query := `SELECT t.session_id, s.title, m.id, t.snip, s.updated_at FROM (` + inner + `) t
		JOIN messages m ON m.rowid = t.rowid JOIN sessions s ON s.id = t.session_id ORDER BY t.r, s.updated_at DESC`
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search messages: %w", err)
	}
	defer rows.Close()
	var out []MessageHit
	seen := map[string]bool{}
	for rows.Next() {
		var h MessageHit
		var updated int64
		if err := rows.Scan(&h.Session, &h.Title, &h.Message, &h.Snippet, &updated); err != nil {
			return nil, fmt.Errorf("store: search messages: %w", err)
		}
		if seen[h.Session] || len(out) == limit {
			continue
		}
		seen[h.Session] = true
		h.Updated = fromNanos(updated)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search messages: %w", err)
	}
	return out, nil
}
