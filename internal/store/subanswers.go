package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// How a sub-agent's last run ended (SubagentState.Ended).
const (
	EndedNone        = ""            // no run since it was spawned or steered
	EndedRunning     = "running"     // a run began and did not end: it runs, or den died during it
	EndedDone        = "done"        // it answered
	EndedCanceled    = "canceled"    // someone stopped it
	EndedBudget      = "budget"      // a budget stopped it
	EndedError       = "error"       // it failed
	EndedInterrupted = "interrupted" // den stopped during it
)

// SubagentState is what a sub-agent owes its parent. It is kept in the
// store, beside the session, so that it outlives the den process that
// started the sub-agent: a den started again delivers what is still
// owed.
type SubagentState struct {
	ID     string
	Parent string
	// Reports says its answers join its parent's conversation when its
	// runs end (den-agent spawn).
	Reports bool
	// Owed says the answer of its current or last run is still to be
	// delivered to the parent.
	Owed bool
	// Ended is how its last run ended (an Ended… constant), Error what
	// stopped it.
	Ended string
	Error string
	// Delivered is when the answer of its last run was delivered (queued
	// for the parent); zero when it was not.
	Delivered time.Time
}

const subagentStateColumns = `id, coalesce(parent, ''), report, owed, ended, end_error, delivered_at`

func scanSubagentState(row interface{ Scan(...any) error }) (SubagentState, error) {
	var st SubagentState
	var delivered sql.NullInt64
	if err := row.Scan(&st.ID, &st.Parent, &st.Reports, &st.Owed, &st.Ended, &st.Error, &delivered); err != nil {
		return SubagentState{}, err
	}
	if delivered.Valid {
		st.Delivered = fromNanos(delivered.Int64)
	}
	return st, nil
}

// SubagentState returns what the session owes its parent.
func (s *Store) SubagentState(ctx context.Context, id string) (SubagentState, error) {
	st, err := scanSubagentState(s.db.QueryRowContext(ctx, `SELECT `+subagentStateColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return SubagentState{}, fmt.Errorf("store: state of sub-agent %s: %w", id, err)
	}
	return st, nil
}

// OwedSubagents returns the sub-agents whose answer is still owed to
// their parent (to parent only, unless it is ""), oldest first.
func (s *Store) OwedSubagents(ctx context.Context, parent string) ([]SubagentState, error) {
	q, args := `SELECT `+subagentStateColumns+` FROM sessions WHERE owed = 1 ORDER BY created_at, id`, []any{}
	if parent != "" {
		q, args = `SELECT `+subagentStateColumns+` FROM sessions WHERE owed = 1 AND parent = ? ORDER BY created_at, id`, []any{parent}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: owed sub-agents: %w", err)
	}
	defer rows.Close()
	var list []SubagentState
	for rows.Next() {
		st, err := scanSubagentState(rows)
		if err != nil {
			return nil, fmt.Errorf("store: owed sub-agents: %w", err)
		}
		list = append(list, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: owed sub-agents: %w", err)
	}
	return list, nil
}

// SetReport says whether the sub-agent's answers join its parent's
// conversation. Turned on, the answer of its current or last run is
// owed; turned off, nothing is.
func (s *Store) SetReport(ctx context.Context, id string, on bool) error {
	q := `UPDATE sessions SET report = 0, owed = 0 WHERE id = ?`
	if on {
		q = `UPDATE sessions SET report = 1, owed = 1, delivered_at = NULL WHERE id = ?`
	}
	return s.updateSubagent(ctx, id, "set the report", q, id)
}

// OweAnswer begins a new round of the sub-agent (it was steered): the
// answer of its next run is owed when it reports, and its last run's
// ending is forgotten (the answer of that run is not this round's),
// unless a run goes on (EndedRunning), which the round joins.
func (s *Store) OweAnswer(ctx context.Context, id string) error {
	return s.updateSubagent(ctx, id, "owe an answer",
		`UPDATE sessions SET owed = report, delivered_at = NULL,
			ended = iif(ended = 'running', ended, ''), end_error = iif(ended = 'running', end_error, '') WHERE id = ?`, id)
}

// SetEnded records how the sub-agent's last run ended (an Ended…
// constant; EndedRunning as a run begins) and what stopped it.
func (s *Store) SetEnded(ctx context.Context, id, ended, errText string) error {
	return s.updateSubagent(ctx, id, "record the end of a run",
		`UPDATE sessions SET ended = ?, end_error = ? WHERE id = ?`, ended, errText, id)
}

// SettleAnswer says the answer of the sub-agent's last run, which ended
// as ended, is owed no more without delivering it: someone waited for
// it, or the parent's turn is gone. A new round begun meanwhile
// (OweAnswer) is left owed. It reports whether an answer was owed.
func (s *Store) SettleAnswer(ctx context.Context, id, ended string) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET owed = 0 WHERE id = ? AND owed = 1 AND ended = ?`, id, ended)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: settle the answer of sub-agent %s: %w", id, err)
	}
	return n > 0, nil
}

// An Answer is what a sub-agent's run gives its parent.
type Answer struct {
	Subagent string
	// Run is how the run it answers for ended, as the store has it
	// (SubagentState.Ended).
	Run string
	// Ended and Error are how the store records that the run ended from
	// now on (Ended "" keeps Run and its error): a run den died during
	// (EndedRunning) becomes EndedInterrupted.
	Ended string
	Error string
	// Message is the message for the parent, whose Session is the
	// parent's.
	Message Queued
}

// DeliverAnswer queues a's message for the parent in the transaction
// that records its delivery, so that an answer is delivered once
// whenever den stops: only while it is owed and the sub-agent's last
// run is still a.Run (not a run begun since). It reports whether it
// was delivered; the returned Queued is the message as queued.
func (s *Store) DeliverAnswer(ctx context.Context, a Answer) (Queued, bool, error) {
	q := a.Message
	var delivered bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var parent string
		err := tx.QueryRowContext(ctx, `SELECT coalesce(parent, '') FROM sessions WHERE id = ? AND owed = 1 AND ended = ?`, a.Subagent, a.Run).Scan(&parent)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if parent != q.Session {
			return fmt.Errorf("its parent is %q, not %q", parent, q.Session)
		}
		t := now()
		set, args := `owed = 0, delivered_at = ?`, []any{t}
		if a.Ended != "" {
			set, args = set+`, ended = ?, end_error = ?`, append(args, a.Ended, a.Error)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET `+set+` WHERE id = ?`, append(args, a.Subagent)...); err != nil {
			return err
		}
		q, err = enqueue(ctx, tx, q, t)
		delivered = err == nil
		return err
	})
	if err != nil {
		return Queued{}, false, fmt.Errorf("store: deliver the answer of sub-agent %s: %w", a.Subagent, err)
	}
	return q, delivered, nil
}

// updateSubagent runs one update of a session's row; a session that is
// not there is ErrNotFound.
func (s *Store) updateSubagent(ctx context.Context, id, what, q string, args ...any) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: %s of sub-agent %s: %w", what, id, err)
	}
	return nil
}
