package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/llm"
)

// ToolCall is one row of the tool-call index: a call an assistant
// message made and, once a later message on the same branch answered
// it, the result.
type ToolCall struct {
	Session   string
	MessageID string // the assistant message that made the call
	Position  int    // the index of the call among that message's parts
	CallID    string
	Name      string
	Input     json.RawMessage // as the model sent it, possibly invalid JSON
	Created   time.Time

	ResultMessageID string // the message holding the result; "" while unanswered
	Result          string // the result's text parts, joined by newlines
	ResultImages    int    // how many images the result holds
	IsError         bool
	Duration        time.Duration // 0 when not recorded
	ExitCode        *int          // a shell command's exit status, when recorded
	Started         time.Time     // zero when not recorded
}

// ToolCalls returns a session's tool calls, on every branch, oldest
// first.
func (s *Store) ToolCalls(ctx context.Context, sessionID string) ([]ToolCall, error) {
	var calls []ToolCall
	err := s.read(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT t.message_id, t.position, t.call_id, t.name, t.input, t.created_at,
				coalesce(t.result_message_id, ''), coalesce(t.result, ''), coalesce(t.result_images, 0),
				coalesce(t.is_error, 0), coalesce(t.duration_ms, 0), t.exit_code, t.started_at
			FROM tool_calls t JOIN messages m ON m.id = t.message_id
			WHERE t.session_id = ? ORDER BY t.created_at, m.rowid, t.position`, sessionID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c := ToolCall{Session: sessionID}
			var input string
			var created, ms int64
			var exit, started sql.NullInt64
			if err := rows.Scan(&c.MessageID, &c.Position, &c.CallID, &c.Name, &input, &created,
				&c.ResultMessageID, &c.Result, &c.ResultImages, &c.IsError, &ms, &exit, &started); err != nil {
				return err
			}
			if exit.Valid {
				n := int(exit.Int64)
				c.ExitCode = &n
			}
			if started.Valid {
				c.Started = fromNanos(started.Int64)
			}
			c.Input = json.RawMessage(input)
			c.Created = fromNanos(created)
			c.Duration = time.Duration(ms) * time.Millisecond
			calls = append(calls, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: tool calls of session %s: %w", sessionID, err)
	}
	return calls, nil
}

// toolIndex keeps the tool_calls table in step with the messages one
// Append inserts. A tool result answers a call of the nearest assistant
// message above it on its branch (the llm protocol answers each turn's
// calls right after it); a result that matches no such call, such as
// one whose call was lost, is left out of the index but stays in the
// message's parts.
type toolIndex struct {
	tx        *sql.Tx
	session   string
	durations map[string]time.Duration

	loaded    bool           // callsOf and positions are set
	callsOf   string         // the nearest assistant message above the insertion point
	positions map[string]int // its call ids → positions
}

// add indexes message m, just inserted as id below parent.
func (x *toolIndex) add(ctx context.Context, id, parent string, m llm.Message, t int64) error {
	if m.Role == llm.Assistant {
		x.loaded, x.callsOf, x.positions = true, id, map[string]int{}
		for i, p := range m.Parts {
			c, ok := p.(*llm.ToolCall)
			if !ok {
				continue
			}
			if _, dup := x.positions[c.ID]; !dup {
				x.positions[c.ID] = i
			}
			if _, err := x.tx.ExecContext(ctx, `INSERT INTO tool_calls
				(message_id, position, session_id, call_id, name, input, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				id, i, x.session, c.ID, c.Name, string(c.Input), t); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range m.Parts {
		r, ok := p.(*llm.ToolResult)
		if !ok {
			continue
		}
		if !x.loaded {
			if err := x.load(ctx, parent); err != nil {
				return err
			}
		}
		pos, ok := x.positions[r.CallID]
		if !ok {
			continue
		}
		text, images := summarize(r.Content)
		var ms sql.NullInt64
		if d, ok := x.durations[r.CallID]; ok {
			ms = sql.NullInt64{Int64: d.Milliseconds(), Valid: true}
		}
		// A duration CallFinished recorded stands; the message now
		// holds the result itself.
		if _, err := x.tx.ExecContext(ctx, `UPDATE tool_calls SET result_message_id = ?, result = ?,
			result_images = ?, is_error = ?, duration_ms = coalesce(duration_ms, ?), result_parts = NULL
			WHERE message_id = ? AND position = ?`,
			id, text, images, r.IsError, ms, x.callsOf, pos); err != nil {
			return err
		}
	}
	return nil
}

// load finds the nearest assistant message at or above id, walking up
// through user messages, and reads its calls.
func (x *toolIndex) load(ctx context.Context, id string) error {
	x.loaded, x.callsOf, x.positions = true, "", nil
	for id != "" {
		var role string
		var parent sql.NullString
		err := x.tx.QueryRowContext(ctx, `SELECT role, parent_id FROM messages WHERE id = ?`, id).Scan(&role, &parent)
		if err != nil {
			return err
		}
		if role == string(llm.Assistant) {
			break
		}
		id = parent.String
	}
	if id == "" {
		return nil
	}
	rows, err := x.tx.QueryContext(ctx, `SELECT call_id, position FROM tool_calls WHERE message_id = ? ORDER BY position`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	x.callsOf, x.positions = id, map[string]int{}
	for rows.Next() {
		var call string
		var pos int
		if err := rows.Scan(&call, &pos); err != nil {
			return err
		}
		if _, dup := x.positions[call]; !dup {
			x.positions[call] = pos
		}
	}
	return rows.Err()
}

// summarize returns a tool result's text parts joined by newlines and
// the number of its images.
func summarize(content []llm.Part) (string, int) {
	var texts []string
	images := 0
	for _, p := range content {
		switch p := p.(type) {
		case *llm.Text:
			texts = append(texts, p.Text)
		case *llm.Image:
			images++
		}
	}
	return strings.Join(texts, "\n"), images
}
