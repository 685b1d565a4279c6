package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/llm"
)

// Tool calls are written ahead. The loop appends an assistant message
// with its calls before any of them runs; then, for each call, it
// records when it started and, while it runs, the tail of its output
// (CallStarted, CallOutput: marks, synced lazily, which survive a killed
// den but not a power cut), and its result as soon as it is ready
// (CallFinished: synced); last it appends the message that holds every
// result. A den killed in between leaves calls without that message:
// OpenCalls returns them with what was recorded, for the next run to
// answer them as interrupted, and the model to know what already ran.

// MaxOutputTail is how much of a running call's output CallOutput keeps.
const MaxOutputTail = 16 << 10

// CallStarted records that a call of an assistant message started to
// run.
func (s *Store) CallStarted(ctx context.Context, messageID, callID string, at time.Time) error {
	err := s.mark(ctx, func(tx *sql.Tx) error {
		return updateCall(ctx, tx, messageID, callID, `started_at = ?`, at.UnixNano())
	})
	if err != nil {
		return fmt.Errorf("store: call %s started: %w", callID, err)
	}
	return nil
}

// CallOutput records that a call was still running at a time, and the
// last output it had printed (at most MaxOutputTail bytes of it, the
// end kept).
func (s *Store) CallOutput(ctx context.Context, messageID, callID, tail string, at time.Time) error {
	if len(tail) > MaxOutputTail {
		tail = tail[len(tail)-MaxOutputTail:]
	}
	err := s.mark(ctx, func(tx *sql.Tx) error {
		return updateCall(ctx, tx, messageID, callID, `output_tail = ?, seen_at = ?`, tail, at.UnixNano())
	})
	if err != nil {
		return fmt.Errorf("store: call %s output: %w", callID, err)
	}
	return nil
}

// CallResult is what a finished call left.
type CallResult struct {
	Result   llm.ToolResult
	Duration time.Duration
	ExitCode *int // a shell command's exit status; nil for other tools
}

// CallFinished records a call's result as soon as it is ready, durably,
// before the message holding the turn's results exists.
func (s *Store) CallFinished(ctx context.Context, messageID string, r CallResult) error {
	parts, err := encodeParts([]llm.Part{&r.Result})
	if err != nil {
		return fmt.Errorf("store: call %s finished: %w", r.Result.CallID, err)
	}
	text, images := summarize(r.Result.Content)
	var exit sql.NullInt64
	if r.ExitCode != nil {
		exit = sql.NullInt64{Int64: int64(*r.ExitCode), Valid: true}
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		return updateCall(ctx, tx, messageID, r.Result.CallID,
			`result_parts = ?, result = ?, result_images = ?, is_error = ?, duration_ms = ?, exit_code = ?`,
			parts, text, images, r.Result.IsError, r.Duration.Milliseconds(), exit)
	})
	if err != nil {
		return fmt.Errorf("store: call %s finished: %w", r.Result.CallID, err)
	}
	return nil
}

func updateCall(ctx context.Context, tx *sql.Tx, messageID, callID, set string, args ...any) error {
	res, err := tx.ExecContext(ctx, `UPDATE tool_calls SET `+set+` WHERE message_id = ? AND call_id = ?`,
		append(args, messageID, callID)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("no call %s in message %s: %w", callID, messageID, ErrNotFound)
	}
	return nil
}

// OpenCall is a call of the session's head message that has no results
// message yet, with what was recorded of it.
type OpenCall struct {
	Call     llm.ToolCall
	Started  time.Time       // zero: it never started
	Seen     time.Time       // the last time den saw it running; zero: not recorded
	Result   *llm.ToolResult // set when it finished
	Duration time.Duration   // of a finished call
	ExitCode *int
	Output   string // the tail of what it printed, for one that did not finish
}

// OpenCalls returns the calls of the session's head message when it is
// an assistant message whose calls were not all answered (den stopped
// while they ran): its id and the calls in order. It returns "" and no
// calls otherwise.
func (s *Store) OpenCalls(ctx context.Context, sessionID string) (string, []OpenCall, error) {
	var head string
	var calls []OpenCall
	err := s.read(ctx, func(tx *sql.Tx) error {
		h, err := sessionHead(ctx, tx, sessionID)
		if err != nil || !h.Valid {
			return err
		}
		var role, parts string
		if err := tx.QueryRowContext(ctx, `SELECT role, parts FROM messages WHERE id = ?`, h.String).Scan(&role, &parts); err != nil {
			return err
		}
		if role != string(llm.Assistant) {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT call_id, name, input, started_at, seen_at, result_parts, coalesce(duration_ms, 0),
				exit_code, coalesce(output_tail, '')
			FROM tool_calls WHERE message_id = ? ORDER BY position`, h.String)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c OpenCall
			var input string
			var started, seen, exit sql.NullInt64
			var result sql.NullString
			var ms int64
			if err := rows.Scan(&c.Call.ID, &c.Call.Name, &input, &started, &seen, &result, &ms, &exit, &c.Output); err != nil {
				return err
			}
			c.Call.Input = []byte(input)
			if started.Valid {
				c.Started = fromNanos(started.Int64)
			}
			if seen.Valid {
				c.Seen = fromNanos(seen.Int64)
			}
			if result.Valid {
				ps, err := decodeParts(result.String)
				if err != nil {
					return fmt.Errorf("call %s: result: %w", c.Call.ID, err)
				}
				if len(ps) == 1 {
					if r, ok := ps[0].(*llm.ToolResult); ok {
						c.Result = r
					}
				}
				c.Duration = time.Duration(ms) * time.Millisecond
			}
			if exit.Valid {
				n := int(exit.Int64)
				c.ExitCode = &n
			}
			calls = append(calls, c)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(calls) > 0 {
			head = h.String
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("store: open calls of session %s: %w", sessionID, err)
	}
	return head, calls, nil
}

// CallFact is what a finished call's card shows beyond its messages.
type CallFact struct {
	Duration time.Duration
	ExitCode *int // a shell command's, when it ran
}

// CallFacts returns the facts of the finished calls of the given
// assistant messages, by call id.
func (s *Store) CallFacts(ctx context.Context, messageIDs []string) (map[string]CallFact, error) {
	out := map[string]CallFact{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		q := `SELECT call_id, duration_ms, exit_code FROM tool_calls WHERE duration_ms IS NOT NULL AND message_id IN (?` +
			strings.Repeat(", ?", len(messageIDs)-1) + `)`
		args := make([]any, len(messageIDs))
		for i, id := range messageIDs {
			args[i] = id
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var ms int64
			var exit sql.NullInt64
			if err := rows.Scan(&id, &ms, &exit); err != nil {
				return err
			}
			f := CallFact{Duration: time.Duration(ms) * time.Millisecond}
			if exit.Valid {
				n := int(exit.Int64)
				f.ExitCode = &n
			}
			out[id] = f
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: facts of calls: %w", err)
	}
	return out, nil
}
