package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Approval statuses. An approval starts pending and is answered once:
// approved or denied by a person (or den run --yes), or expired when
// nobody answered in time.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Approval scopes: how far an answer reaches.
const (
	ScopeOnce    = "once"    // this call only
	ScopeSession = "session" // this command, action and subject, for the rest of the session
	ScopeAlways  = "always"  // this command, action and subject for the agent: a rule
)

// Approval is a request for a person's answer to one host-command call.
type Approval struct {
	ID        string
	Agent     string
	Session   string
	Command   string
	Action    string
	Subject   string   // the argument an answer with scope session or always covers
	Detail    string   // the exact effect a person was shown (redacted)
	Args      []string // already redacted by the caller, whole
	Status    string   // ApprovalPending, ApprovalApproved, …
	Scope     string   // "" until answered (and for expired ones)
	DecidedBy string   // who answered: "user", "timeout", …
	Created   time.Time
	Expires   time.Time // a pending approval past this is expired
	Decided   time.Time // zero while pending
}

// ApprovalAnswer is the answer AnswerApproval records.
type ApprovalAnswer struct {
	Status    string // ApprovalApproved, ApprovalDenied or ApprovalExpired
	Scope     string // ScopeOnce, ScopeSession or ScopeAlways; "" for expired
	DecidedBy string // who answered; must not be empty
}

// Rule is a standing per-agent decision for a command, action and
// subject, made by answering an approval with scope "always".
type Rule struct {
	Agent    string
	Command  string
	Action   string
	Subject  string // "" for calls without one
	Decision string // "allow", "ask" or "deny"
	Created  time.Time
}

// AuditEntry is one host-command call as the audit log keeps it.
type AuditEntry struct {
	ID         int64
	Time       time.Time // when the call arrived
	Agent      string
	Session    string
	Command    string
	Action     string
	Args       []string // already redacted by the caller
	Decision   string   // "allow" or "deny"
	DecidedBy  string   // "policy", "rule", "session", "user", "auto", "timeout", …
	ApprovalID string   // the approval that decided it, if any
	ExitCode   int
	Waited     time.Duration // spent waiting for an answer
	Duration   time.Duration // spent running the command
}

// AuditFilter selects audit entries; empty fields match everything.
type AuditFilter struct {
	Agent   string
	Session string
	Command string
	Since   time.Time
}

// CreateApproval stores a pending approval and returns it with its id
// and creation time set. a.Expires must be set.
func (s *Store) CreateApproval(ctx context.Context, a Approval) (Approval, error) {
	if a.Agent == "" || a.Command == "" || a.Expires.IsZero() {
		return a, errors.New("store: create approval: agent, command and expiry are required")
	}
	args, err := marshalArgs(a.Args)
	if err != nil {
		return a, fmt.Errorf("store: create approval: %w", err)
	}
	t := time.Now()
	a.ID = newID(t)
	a.Status, a.Scope, a.DecidedBy = ApprovalPending, "", ""
	a.Created, a.Decided = t.UTC(), time.Time{}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, agent, session_id, command, action, subject, detail, args, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.Agent, a.Session, a.Command, a.Action, a.Subject, a.Detail, args, t.UnixNano(), a.Expires.UnixNano())
		return err
	})
	if err != nil {
		return a, fmt.Errorf("store: create approval: %w", err)
	}
	return a, nil
}

const approvalColumns = `id, agent, session_id, command, action, subject, detail, args, status, scope, decided_by, created_at, expires_at, decided_at`

// GetApproval returns an approval; ErrNotFound when there is none with
// that id. A pending approval past its deadline is reported as is: the
// caller compares Expires.
func (s *Store) GetApproval(ctx context.Context, id string) (Approval, error) {
	var a Approval
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("store: approval %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: get approval %q: %w", id, err)
	}
	return a, nil
}

// AnswerApproval answers a pending approval and returns it as answered.
// Only the first answer counts: an approval already answered gives
// ErrAnswered (with the row as it stands), an unknown id ErrNotFound,
// and one past its deadline is marked expired and gives ErrExpired. An
// approval or denial with scope "always" also sets the agent's rule for
// the command and action, in the same transaction.
func (s *Store) AnswerApproval(ctx context.Context, id string, ans ApprovalAnswer) (Approval, error) {
	if err := checkAnswer(ans); err != nil {
		return Approval{}, fmt.Errorf("store: answer approval %q: %w", id, err)
	}
	var a Approval
	var expired bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
		if err != nil {
			return err
		}
		if a.Status != ApprovalPending {
			return ErrAnswered
		}
		t := time.Now()
		if ans.Status != ApprovalExpired && !t.Before(a.Expires) {
			expired = true
			ans = ApprovalAnswer{Status: ApprovalExpired, DecidedBy: "timeout"}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, scope = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = 'pending'`,
			ans.Status, ans.Scope, ans.DecidedBy, t.UnixNano(), id); err != nil {
			return err
		}
		a.Status, a.Scope, a.DecidedBy, a.Decided = ans.Status, ans.Scope, ans.DecidedBy, t.UTC()
		if ans.Scope == ScopeAlways {
			decision := "allow"
			if ans.Status == ApprovalDenied {
				decision = "deny"
			}
			return putRule(ctx, tx, Rule{Agent: a.Agent, Command: a.Command, Action: a.Action, Subject: a.Subject, Decision: decision}, t)
		}
		return nil
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return a, fmt.Errorf("store: approval %q: %w", id, ErrNotFound)
	case errors.Is(err, ErrAnswered):
		return a, fmt.Errorf("store: approval %q: %w (%s)", id, ErrAnswered, a.Status)
	case err != nil:
		return a, fmt.Errorf("store: answer approval %q: %w", id, err)
	case expired:
		return a, fmt.Errorf("store: approval %q: %w", id, ErrExpired)
	}
	return a, nil
}

func checkAnswer(ans ApprovalAnswer) error {
	if ans.DecidedBy == "" {
		return errors.New("who decided is required")
	}
	switch ans.Status {
	case ApprovalApproved, ApprovalDenied:
		switch ans.Scope {
		case ScopeOnce, ScopeSession, ScopeAlways:
			return nil
		}
		return fmt.Errorf("scope %q: want once, session or always", ans.Scope)
	case ApprovalExpired:
		if ans.Scope != "" {
			return errors.New("an expiry has no scope")
		}
		return nil
	}
	return fmt.Errorf("status %q: want approved, denied or expired", ans.Status)
}

// PendingApprovals lists the approvals still waiting for an answer and
// not past their deadline, oldest first; agent "" lists every agent's.
func (s *Store) PendingApprovals(ctx context.Context, agent string) ([]Approval, error) {
	var out []Approval
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+approvalColumns+` FROM approvals
			WHERE status = 'pending' AND (? = '' OR agent = ?) AND expires_at > ?
			ORDER BY created_at, id`, agent, agent, time.Now().UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: pending approvals: %w", err)
	}
	return out, nil
}

// SessionAnswer returns the latest answer given with scope "session"
// for the command, action and subject in the session; ok is false when
// there is none.
func (s *Store) SessionAnswer(ctx context.Context, agent, session, command, action, subject string) (a Approval, ok bool, err error) {
	if session == "" {
		return a, false, nil
	}
	err = s.read(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals
			WHERE session_id = ? AND command = ? AND action = ? AND subject = ? AND scope = 'session' AND agent = ?
			  AND status IN ('approved', 'denied')
			ORDER BY decided_at DESC LIMIT 1`, session, command, action, subject, agent))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, false, nil
	}
	if err != nil {
		return Approval{}, false, fmt.Errorf("store: session answer: %w", err)
	}
	return a, true, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanApproval(r rowScanner) (Approval, error) {
	var a Approval
	var args string
	var created, expires int64
	var decided sql.NullInt64
	if err := r.Scan(&a.ID, &a.Agent, &a.Session, &a.Command, &a.Action, &a.Subject, &a.Detail, &args, &a.Status, &a.Scope, &a.DecidedBy, &created, &expires, &decided); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(args), &a.Args); err != nil {
		return a, fmt.Errorf("approval %s: args: %w", a.ID, err)
	}
	a.Created, a.Expires = fromNanos(created), fromNanos(expires)
	if decided.Valid {
		a.Decided = fromNanos(decided.Int64)
	}
	return a, nil
}

// AddRule sets the agent's standing decision for a command, action and
// subject, replacing any earlier one.
func (s *Store) AddRule(ctx context.Context, r Rule) error {
	if r.Agent == "" || r.Command == "" {
		return errors.New("store: add rule: agent and command are required")
	}
	switch r.Decision {
	case "allow", "ask", "deny":
	default:
		return fmt.Errorf("store: add rule: decision %q: want allow, ask or deny", r.Decision)
	}
	err := s.write(ctx, func(tx *sql.Tx) error { return putRule(ctx, tx, r, time.Now()) })
	if err != nil {
		return fmt.Errorf("store: add rule: %w", err)
	}
	return nil
}

func putRule(ctx context.Context, tx *sql.Tx, r Rule, t time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO rules (agent, command, action, subject, decision, created_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent, command, action, subject) DO UPDATE SET decision = excluded.decision, created_at = excluded.created_at`,
		r.Agent, r.Command, r.Action, r.Subject, r.Decision, t.UnixNano())
	return err
}

// DeleteRule removes the agent's rules for a command and action (every
// subject's when subject is nil, else that subject's), and reports
// whether there was one.
func (s *Store) DeleteRule(ctx context.Context, agent, command, action string, subject *string) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		q := `DELETE FROM rules WHERE agent = ? AND command = ? AND action = ?`
		args := []any{agent, command, action}
		if subject != nil {
			q, args = q+` AND subject = ?`, append(args, *subject)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: delete rule: %w", err)
	}
	return n > 0, nil
}

// Rules lists the agent's rules ordered by command, action and subject;
// agent "" lists every agent's.
func (s *Store) Rules(ctx context.Context, agent string) ([]Rule, error) {
	var out []Rule
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT agent, command, action, subject, decision, created_at FROM rules
			WHERE ? = '' OR agent = ? ORDER BY agent, command, action, subject`, agent, agent)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r Rule
			var created int64
			if err := rows.Scan(&r.Agent, &r.Command, &r.Action, &r.Subject, &r.Decision, &created); err != nil {
				return err
			}
			r.Created = fromNanos(created)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: rules: %w", err)
	}
	return out, nil
}

// AddAudit appends an entry to the audit log and returns its id. A zero
// Time is taken as now.
func (s *Store) AddAudit(ctx context.Context, e AuditEntry) (int64, error) {
	if e.Agent == "" || e.Command == "" {
		return 0, errors.New("store: add audit: agent and command are required")
	}
	if e.Decision != "allow" && e.Decision != "deny" {
		return 0, fmt.Errorf("store: add audit: decision %q: want allow or deny", e.Decision)
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	args, err := marshalArgs(e.Args)
	if err != nil {
		return 0, fmt.Errorf("store: add audit: %w", err)
	}
	var id int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO audit (created_at, agent, session_id, command, action, args, decision, decided_by, approval_id, exit_code, waited_us, duration_us)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.Time.UnixNano(), e.Agent, e.Session, e.Command, e.Action, args, e.Decision, e.DecidedBy, e.ApprovalID, e.ExitCode,
			max(e.Waited.Microseconds(), 0), max(e.Duration.Microseconds(), 0))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: add audit: %w", err)
	}
	return id, nil
}

// ListAudit returns the newest entries matching f, newest first, at most
// limit of them (limit <= 0: 100).
func (s *Store) ListAudit(ctx context.Context, f AuditFilter, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	var where []string
	var args []any
	if f.Agent != "" {
		where, args = append(where, "agent = ?"), append(args, f.Agent)
	}
	if f.Session != "" {
		where, args = append(where, "session_id = ?"), append(args, f.Session)
	}
	if f.Command != "" {
		where, args = append(where, "command = ?"), append(args, f.Command)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, f.Since.UnixNano())
	}
	q := `SELECT id, created_at, agent, session_id, command, action, args, decision, decided_by, approval_id, exit_code, waited_us, duration_us FROM audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	var out []AuditEntry
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e AuditEntry
			var created, waited, dur int64
			var argJSON string
			if err := rows.Scan(&e.ID, &created, &e.Agent, &e.Session, &e.Command, &e.Action, &argJSON, &e.Decision, &e.DecidedBy, &e.ApprovalID, &e.ExitCode, &waited, &dur); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(argJSON), &e.Args); err != nil {
				return fmt.Errorf("audit %d: args: %w", e.ID, err)
			}
			e.Time = fromNanos(created)
			e.Waited, e.Duration = time.Duration(waited)*time.Microsecond, time.Duration(dur)*time.Microsecond
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	return out, nil
}

func marshalArgs(args []string) (string, error) {
	if args == nil {
		args = []string{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("args: %w", err)
	}
	return string(b), nil
}
