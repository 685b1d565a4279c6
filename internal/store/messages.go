package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/llm"
)

// StoredMessage is a message with its place in a session's tree.
type StoredMessage struct {
	ID       string
	Session  string
	ParentID string // "" for a first message (a root)
	Message  llm.Message
	Model    string // for assistant messages, the model that wrote it; else ""
	Created  time.Time
}

// AppendOptions carries what Append records beside the messages.
type AppendOptions struct {
	// Model is recorded on the assistant messages: the model that
	// actually answered (after any fallback). Empty means the session's
	// model.
	Model string
	// ToolDurations are how long each tool call ran, by call id; they go
	// in the tool-call index with the results that answer them (unless
	// CallFinished recorded them already).
	ToolDurations map[string]time.Duration
	// Usage, when set, is the request that produced the (one) assistant
	// message: stored with it, in the same transaction, and added to the
	// session's totals.
	Usage *UsageRecord
	// DeliverQueued appends the messages queued for the session
	// (EnqueueMessage) after msgs, each a user message of its own with
	// the id it was given when queued, and takes them off the queue, in
	// the same transaction. Delivered says which. With DeliverQueued,
	// msgs may be empty: only the queue is delivered.
	DeliverQueued bool
	Delivered     *[]Queued
}

// Append appends msgs to a session as a chain below its head and moves
// the head to the last of them, in one transaction: either every
// message is stored or none is. It returns the new messages' ids, in
// order. The head is read inside the transaction, so appends racing
// with each other or with SetHead each extend whatever head they find.
//
// A message's role must be llm.User or llm.Assistant. Appending no
// messages does nothing.
func (s *Store) Append(ctx context.Context, sessionID string, msgs ...llm.Message) ([]string, error) {
	return s.AppendWith(ctx, sessionID, AppendOptions{}, msgs...)
}

// AppendWith is Append with options. The ids it returns are those of
// msgs, not of delivered queued messages (Delivered has those).
func (s *Store) AppendWith(ctx context.Context, sessionID string, opts AppendOptions, msgs ...llm.Message) ([]string, error) {
	if len(msgs) == 0 && !opts.DeliverQueued {
		return nil, nil
	}
	encoded := make([]string, len(msgs))
	for i, m := range msgs {
		var err error
		if encoded[i], err = encodeParts(m.Parts); err != nil {
			return nil, fmt.Errorf("store: append to session %s: message %d: %w", sessionID, i, err)
		}
	}
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		all, enc, given := msgs, encoded, make([]string, len(msgs))
		if opts.DeliverQueued {
			q, err := deliverQueued(ctx, tx, sessionID)
			if err != nil {
				return err
			}
			for _, m := range q {
				msg := m.message()
				e, err := encodeParts(msg.Parts)
				if err != nil {
					return fmt.Errorf("queued message %d: %w", m.ID, err)
				}
				all = append(all[:len(all):len(all)], msg)
				enc = append(enc[:len(enc):len(enc)], e)
				given = append(given, m.MessageID)
			}
			if opts.Delivered != nil {
				*opts.Delivered = q
			}
		}
		if len(all) == 0 {
			return nil
		}
		got, err := appendTx(ctx, tx, sessionID, opts, all, enc, given)
		if err != nil {
			return err
		}
		ids = got[:len(msgs)]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: append to session %s: %w", sessionID, err)
	}
	return ids, nil
}

// appendTx inserts msgs below the head; given[i], when set, is message
// i's id (a queued message's), else a new one is made.
func appendTx(ctx context.Context, tx *sql.Tx, sessionID string, opts AppendOptions, msgs []llm.Message, encoded, given []string) ([]string, error) {
	var head sql.NullString
	var model string
	err := tx.QueryRowContext(ctx, `SELECT head, model FROM sessions WHERE id = ?`, sessionID).Scan(&head, &model)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if opts.Model != "" {
		model = opts.Model
	}
	insert, err := tx.PrepareContext(ctx, `INSERT INTO messages (id, session_id, parent_id, role, parts, model, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	defer insert.Close()
	idx := toolIndex{tx: tx, session: sessionID, durations: opts.ToolDurations}

	t := now()
	ids := make([]string, len(msgs))
	parent := head
	for i, m := range msgs {
		id := newID(fromNanos(t))
		if i < len(given) && given[i] != "" {
			id = given[i]
		}
		var msgModel sql.NullString
		if m.Role == llm.Assistant {
			msgModel = sql.NullString{String: model, Valid: true}
		}
		if _, err := insert.ExecContext(ctx, id, sessionID, parent, string(m.Role), encoded[i], msgModel, t); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if err := idx.add(ctx, id, parent.String, m, t); err != nil {
			return nil, fmt.Errorf("message %d: index tool calls: %w", i, err)
		}
		ids[i] = id
		parent = sql.NullString{String: id, Valid: true}
	}
	if err := touchSession(ctx, tx, sessionID, `head = ?`, parent.String); err != nil {
		return nil, fmt.Errorf("move head: %w", err)
	}
	if opts.Usage != nil {
		u := *opts.Usage
		u.Session = sessionID
		msgID := ""
		for i, m := range msgs {
			if m.Role == llm.Assistant {
				msgID = ids[i]
			}
		}
		if err := insertUsage(ctx, tx, u, msgID); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
	}
	return ids, nil
}

// History returns the messages on the path from the session's first
// message to its head, in order: the conversation as the model sees it.
func (s *Store) History(ctx context.Context, sessionID string) ([]llm.Message, error) {
	path, err := s.Path(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	msgs := make([]llm.Message, len(path))
	for i, m := range path {
		msgs[i] = m.Message
	}
	return msgs, nil
}

// Path is History with each message's id and metadata.
func (s *Store) Path(ctx context.Context, sessionID string) ([]StoredMessage, error) {
	var path []StoredMessage
	err := s.read(ctx, func(tx *sql.Tx) error {
		head, err := sessionHead(ctx, tx, sessionID)
		if err != nil || !head.Valid {
			return err
		}
		// Parents are always older than their children and never change,
		// so the walk up ends at a root.
		path, err = queryMessages(ctx, tx, `
			WITH RECURSIVE up(id, depth) AS (
				SELECT ?, 0
				UNION ALL
				SELECT m.parent_id, up.depth + 1 FROM up JOIN messages m ON m.id = up.id
				WHERE m.parent_id IS NOT NULL
			)
			SELECT `+messageColumns+` FROM up JOIN messages m ON m.id = up.id ORDER BY up.depth DESC`, head.String)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: history of session %s: %w", sessionID, err)
	}
	return path, nil
}

// GetMessage returns one message.
func (s *Store) GetMessage(ctx context.Context, id string) (StoredMessage, error) {
	msgs, err := queryMessages(ctx, s.db, `SELECT `+messageColumns+` FROM messages m WHERE m.id = ?`, id)
	if err == nil && len(msgs) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return StoredMessage{}, fmt.Errorf("store: get message %s: %w", id, err)
	}
	return msgs[0], nil
}

// SetHead makes messageID the session's head, so that History follows
// its branch and the next Append continues it. To regenerate or edit a
// message, set the head to its parent and append the new version; the
// old branch stays, listed by Children. An empty messageID empties the
// head: the next Append starts a new root (listed by Roots).
func (s *Store) SetHead(ctx context.Context, sessionID, messageID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if messageID == "" {
			return touchSession(ctx, tx, sessionID, `head = NULL`)
		}
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT session_id FROM messages WHERE id = ?`, messageID).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) || err == nil && owner != sessionID {
			return fmt.Errorf("message %s of this session: %w", messageID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		return touchSession(ctx, tx, sessionID, `head = ?`, messageID)
	})
	if err != nil {
		return fmt.Errorf("store: set head of session %s: %w", sessionID, err)
	}
	return nil
}

// Children returns the messages whose parent is messageID, oldest
// first: the versions that follow it.
func (s *Store) Children(ctx context.Context, messageID string) ([]StoredMessage, error) {
	var children []StoredMessage
	err := s.read(ctx, func(tx *sql.Tx) error {
		var session string
		err := tx.QueryRowContext(ctx, `SELECT session_id FROM messages WHERE id = ?`, messageID).Scan(&session)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		children, err = queryMessages(ctx, tx, `SELECT `+messageColumns+` FROM messages m
			WHERE m.session_id = ? AND m.parent_id = ? ORDER BY m.created_at, m.rowid`, session, messageID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: children of message %s: %w", messageID, err)
	}
	return children, nil
}

// Roots returns a session's first messages, oldest first: the versions
// of the conversation's opening.
func (s *Store) Roots(ctx context.Context, sessionID string) ([]StoredMessage, error) {
	var roots []StoredMessage
	err := s.read(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		roots, err = queryMessages(ctx, tx, `SELECT `+messageColumns+` FROM messages m
			WHERE m.session_id = ? AND m.parent_id IS NULL ORDER BY m.created_at, m.rowid`, sessionID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: roots of session %s: %w", sessionID, err)
	}
	return roots, nil
}

const messageColumns = `m.id, m.session_id, coalesce(m.parent_id, ''), m.role, m.parts, coalesce(m.model, ''), m.created_at`

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryMessages(ctx context.Context, q querier, query string, args ...any) ([]StoredMessage, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var msgs []StoredMessage
	for rows.Next() {
		var m StoredMessage
		var role, parts string
		var created int64
		if err := rows.Scan(&m.ID, &m.Session, &m.ParentID, &role, &parts, &m.Model, &created); err != nil {
			return nil, err
		}
		m.Message.Role = llm.Role(role)
		if m.Message.Parts, err = decodeParts(parts); err != nil {
			return nil, fmt.Errorf("message %s: decode parts: %w", m.ID, err)
		}
		m.Created = fromNanos(created)
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// sessionHead is the session's head message id, not Valid for a session
// without messages; ErrNotFound for no such session.
func sessionHead(ctx context.Context, tx *sql.Tx, sessionID string) (sql.NullString, error) {
	var head sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT head FROM sessions WHERE id = ?`, sessionID).Scan(&head)
	if errors.Is(err, sql.ErrNoRows) {
		return head, ErrNotFound
	}
	return head, err
}
