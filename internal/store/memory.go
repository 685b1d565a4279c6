package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MemoryFile is what the index knows of one file of an agent's memory:
// its size and modification time when it was last indexed, so that a
// file is read again only when it changed.
type MemoryFile struct {
	Size  int64
	MTime int64 // nanoseconds
}

// MemoryEntry is one entry of an agent's memory: a dated entry of a
// daily log, or a block of GLOBAL.md or SOUL.md.
type MemoryEntry struct {
	File    string    // "GLOBAL.md", "SOUL.md", "2026-12-02.md"
	Day     string    // the log's date, "" for GLOBAL.md and SOUL.md
	At      time.Time // when it was written, zero when unknown
	Session string    // the session it was written in, "" when unknown
	Message string    // the message that wrote it, "" when unknown
	Seq     int       // its place in its file
	Body    string
}

// MemoryHit is an entry a search found, with its relevance (larger is
// better; comparable only within one search).
type MemoryHit struct {
	MemoryEntry
	Relevance float64
}

// MemoryFiles returns the files of agent's memory as last indexed.
func (s *Store) MemoryFiles(ctx context.Context, agent string) (map[string]MemoryFile, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, size, mtime FROM memory_files WHERE agent = ?`, agent)
	if err != nil {
		return nil, fmt.Errorf("store: memory files of %s: %w", agent, err)
	}
	defer rows.Close()
	out := map[string]MemoryFile{}
	for rows.Next() {
		var name string
		var f MemoryFile
		if err := rows.Scan(&name, &f.Size, &f.MTime); err != nil {
			return nil, fmt.Errorf("store: memory files of %s: %w", agent, err)
		}
		out[name] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: memory files of %s: %w", agent, err)
	}
	return out, nil
}

// IndexMemoryFile replaces what the index holds of one file of agent's
// memory with entries, in one transaction.
func (s *Store) IndexMemoryFile(ctx context.Context, agent, name string, f MemoryFile, entries []MemoryEntry) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_text WHERE agent = ? AND file = ?`, agent, name); err != nil {
			return err
		}
		for _, e := range entries {
			var at any
			if !e.At.IsZero() {
				at = e.At.UnixNano()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO memory_text (body, agent, file, day, at, session, message, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				e.Body, agent, name, e.Day, at, e.Session, e.Message, e.Seq); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO memory_files (agent, name, size, mtime) VALUES (?, ?, ?, ?)
			ON CONFLICT (agent, name) DO UPDATE SET size = excluded.size, mtime = excluded.mtime`, agent, name, f.Size, f.MTime)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: index memory %s/%s: %w", agent, name, err)
	}
	return nil
}

// ForgetMemoryFile drops a file of agent's memory from the index.
func (s *Store) ForgetMemoryFile(ctx context.Context, agent, name string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_text WHERE agent = ? AND file = ?`, agent, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM memory_files WHERE agent = ? AND name = ?`, agent, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: forget memory %s/%s: %w", agent, name, err)
	}
	return nil
}

// MemoryQuery picks entries of an agent's memory: those matching Text
// (full-text: any of its words, the last one also as the start of a
// word; the more and rarer the words an entry holds, the better it
// ranks), or, with no Text, the newest. Files limits them to these
// files and Daily to the daily logs; at most Limit (0: 50).
type MemoryQuery struct {
	Text  string
	Files []string
	Daily bool
	Limit int
}

// SearchMemory finds entries of agent's memory by q.
func (s *Store) SearchMemory(ctx context.Context, agent string, q MemoryQuery) ([]MemoryHit, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	where := []string{`agent = ?`}
	args := []any{agent}
	if len(q.Files) > 0 {
		where = append(where, `file IN (`+strings.Repeat(`?, `, len(q.Files)-1)+`?)`)
		for _, f := range q.Files {
			args = append(args, f)
		}
	}
	if q.Daily {
		where = append(where, `day <> ''`)
	}
	rank := `0.0`
	order := `coalesce(at, 0) DESC, day DESC, seq DESC`
	if match := anyWord(q.Text); match != "" {
		where = append(where, `memory_text MATCH ?`)
		args = append(args, match)
		rank, order = `-bm25(memory_text)`, `bm25(memory_text)`
	} else if strings.TrimSpace(q.Text) != "" {
		return nil, nil // only punctuation: nothing can match
	}
	query := `SELECT file, day, coalesce(at, 0), session, message, seq, body, ` + rank + ` FROM memory_text WHERE ` +
		strings.Join(where, ` AND `) + ` ORDER BY ` + order + ` LIMIT ?`
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search memory of %s: %w", agent, err)
	}
	defer rows.Close()
	var out []MemoryHit
	for rows.Next() {
		var h MemoryHit
		var at int64
		if err := rows.Scan(&h.File, &h.Day, &at, &h.Session, &h.Message, &h.Seq, &h.Body, &h.Relevance); err != nil {
			return nil, fmt.Errorf("store: search memory of %s: %w", agent, err)
		}
		if at != 0 {
			h.At = fromNanos(at)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search memory of %s: %w", agent, err)
	}
	return out, nil
}

// anyWord is an FTS5 query for entries holding any word of text (the
// last also as a prefix), each quoted so that no word is syntax; ""
// when text has no word.
func anyWord(text string) string {
	var words []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '\'' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127)
	}) {
		words = append(words, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	if len(words) == 0 {
		return ""
	}
	words[len(words)-1] += "*"
	return strings.Join(words, " OR ")
}

// SetSessionMemory turns memory on or off for a session; nil follows
// its agent's default.
func (s *Store) SetSessionMemory(ctx context.Context, id string, on *bool) error {
	var v any
	if on != nil {
		v = 0
		if *on {
			v = 1
		}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET memory = ? WHERE id = ?`, v, id)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("store: set memory of session %s: %w", id, err)
	}
	return nil
}

// SessionMemory is whether memory is on for a session: nil when it
// follows its agent's default.
func (s *Store) SessionMemory(ctx context.Context, id string) (*bool, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT memory FROM sessions WHERE id = ?`, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: memory of session %s: %w", id, err)
	}
	if !v.Valid {
		return nil, nil
	}
	on := v.Int64 == 1
	return &on, nil
}

// MemoryFilesWith names the files of agent's memory that hold entries
// written in session (when not "") or by one of messages.
func (s *Store) MemoryFilesWith(ctx context.Context, agent, session string, messages []string) ([]string, error) {
	var or []string
	args := []any{agent}
	if session != "" {
		or, args = append(or, `session = ?`), append(args, session)
	}
	if len(messages) > 0 {
		or = append(or, `message IN (`+strings.Repeat(`?, `, len(messages)-1)+`?)`)
		for _, m := range messages {
			args = append(args, m)
		}
	}
	if len(or) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT file FROM memory_text WHERE agent = ? AND (`+strings.Join(or, ` OR `)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: memory files of messages: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, fmt.Errorf("store: memory files of messages: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
