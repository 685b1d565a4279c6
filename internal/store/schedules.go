package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Schedule is a scheduled job as stored (package schedule gives the
// fields their meaning): what runs when, for which agent, and how far
// its slots are accounted for.
type Schedule struct {
	ID    int64
	Agent string
	Name  string
	// Kind, Spec, TZ and Anchor are the when-spec.
	Kind, Spec, TZ string
	Anchor         time.Time
	Prompt         string
	// Session names the session the job continues ("" for a fresh one
	// per run); SessionID is that session once made.
	Session, SessionID string
	Model, Budget      string
	MaxTurns           int
	Verify             string
	Deliver            string
	Speak              bool
	Approvals          string
	Misfire            string
	Grace, Jitter      time.Duration
	Retries            int
	Paused             bool
	CreatedBy          string
	Created, Updated   time.Time
	// Accounted is the slot up to which every slot has a run row;
	// NextDue is when the next slot is due (zero: none).
	Accounted, NextDue time.Time
}

// ScheduleRun is a slot of a job accounted for: a run (queued,
// running, or how it ended), or a slot that did not run (missed,
// skipped). (Schedule, Slot, Attempt) is unique: a slot is claimed by
// inserting its row.
type ScheduleRun struct {
	ID       int64
	Schedule int64
	Slot     time.Time
	Attempt  int
	Due      time.Time
	Cause    string
	Status   string
	Reason   string
	Started  time.Time
	Ended    time.Time
	Session  string
	CostUSD  float64
	Answer   string
	RetryAt  time.Time
	Delivery int64 // 0: none
	Owner    string
}

// ScheduleDelivery is a message to the user about runs (an answer, a
// failure, missed slots), tracked until it reaches them or fails for
// good.
type ScheduleDelivery struct {
	ID          int64
	Schedule    int64
	Kind        string
	Title, Body string
	Session     string
	Speak       bool
	Status      string
	Attempts    int
	NextAttempt time.Time
	Detail      string
	Error       string
	// Reached are the channels an attempt reached (a browser's push
	// endpoint, speech), which later attempts skip.
	Reached   []string
	Created   time.Time
	Delivered time.Time
}

// RunQuery selects runs for ScheduleRuns: of one job (0: every job), of
// one agent ("" every agent), with ids below Before (0: the newest),
// at most Limit (0: 100), newest first.
type RunQuery struct {
	Schedule int64
	Agent    string
	Before   int64
	Limit    int
}

const scheduleCols = `id, agent, name, kind, spec, tz, anchor, prompt, session, session_id, model, budget, max_turns, verify,
	deliver, speak, approvals, misfire, grace, jitter, retries, paused, created_by, created_at, updated_at, accounted, next_due`

const runCols = `id, schedule_id, slot, attempt, due, cause, status, reason, started, ended, session_id, cost_micro_usd,
	answer, retry_at, delivery_id, owner`

const deliveryCols = `id, schedule_id, kind, title, body, session_id, speak, status, attempts, next_attempt, detail, error,
	reached, created_at, delivered_at`

type scanner interface{ Scan(...any) error }

// scanRows reads every row with scan, and closes rows.
func scanRows[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanSchedule(r scanner) (Schedule, error) {
	var j Schedule
	var anchor, grace, jitter, created, updated, accounted int64
	var next sql.NullInt64
	err := r.Scan(&j.ID, &j.Agent, &j.Name, &j.Kind, &j.Spec, &j.TZ, &anchor, &j.Prompt, &j.Session, &j.SessionID, &j.Model,
		&j.Budget, &j.MaxTurns, &j.Verify, &j.Deliver, &j.Speak, &j.Approvals, &j.Misfire, &grace, &jitter, &j.Retries,
		&j.Paused, &j.CreatedBy, &created, &updated, &accounted, &next)
	j.Anchor, j.Grace, j.Jitter = optTime(anchor), time.Duration(grace), time.Duration(jitter)
	j.Created, j.Updated, j.Accounted = fromNanos(created), fromNanos(updated), optTime(accounted)
	if next.Valid {
		j.NextDue = fromNanos(next.Int64)
	}
	return j, err
}

func scanRun(r scanner) (ScheduleRun, error) {
	var u ScheduleRun
	var slot, due, cost int64
	var started, ended, retry, delivery sql.NullInt64
	err := r.Scan(&u.ID, &u.Schedule, &slot, &u.Attempt, &due, &u.Cause, &u.Status, &u.Reason, &started, &ended, &u.Session,
		&cost, &u.Answer, &retry, &delivery, &u.Owner)
	u.Slot, u.Due, u.CostUSD = fromNanos(slot), fromNanos(due), float64(cost)/1e6
	u.Started, u.Ended, u.RetryAt = nullTime(started), nullTime(ended), nullTime(retry)
	u.Delivery = delivery.Int64
	return u, err
}

func scanDelivery(r scanner) (ScheduleDelivery, error) {
	var d ScheduleDelivery
	var created int64
	var reached string
	var next, delivered sql.NullInt64
	err := r.Scan(&d.ID, &d.Schedule, &d.Kind, &d.Title, &d.Body, &d.Session, &d.Speak, &d.Status, &d.Attempts, &next,
		&d.Detail, &d.Error, &reached, &created, &delivered)
	d.NextAttempt, d.Created, d.Delivered = nullTime(next), fromNanos(created), nullTime(delivered)
	if reached != "" {
		d.Reached = strings.Split(reached, "\n")
	}
	return d, err
}

// optTime reads a time stored as 0 for none.
func optTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return fromNanos(ns)
}

func nanosOr0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nullTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

func nullNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// Schedules lists the jobs of agent ("" for every agent) by id.
func (s *Store) Schedules(ctx context.Context, agent string) ([]Schedule, error) {
	var out []Schedule
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE ? = '' OR agent = ? ORDER BY id`, agent, agent)
		if err != nil {
			return err
		}
		out, err = scanRows(rows, scanSchedule)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: schedules: %w", err)
	}
	return out, nil
}

// GetSchedule reads one job (ErrNotFound when there is none).
func (s *Store) GetSchedule(ctx context.Context, id int64) (Schedule, error) {
	j, err := scanSchedule(s.db.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("store: schedule %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("store: schedule %d: %w", id, err)
	}
	return j, nil
}

// ScheduleRuns lists runs, newest slot first (a retry after the attempt
// it retries).
func (s *Store) ScheduleRuns(ctx context.Context, q RunQuery) ([]ScheduleRun, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	before := q.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	var out []ScheduleRun
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("r.", runCols)+` FROM schedule_runs r JOIN schedules j ON j.id = r.schedule_id
			WHERE (? = 0 OR r.schedule_id = ?) AND (? = '' OR j.agent = ?) AND r.id < ?
			ORDER BY r.slot DESC, r.attempt DESC, r.id DESC LIMIT ?`, q.Schedule, q.Schedule, q.Agent, q.Agent, before, q.Limit)
		if err != nil {
			return err
		}
		out, err = scanRows(rows, scanRun)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: schedule runs: %w", err)
	}
	return out, nil
}

// LastScheduleRuns is each job's newest run row (the latest slot's
// latest attempt), by job id.
func (s *Store) LastScheduleRuns(ctx context.Context) (map[int64]ScheduleRun, error) {
	out := map[int64]ScheduleRun{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("r.", runCols)+` FROM schedules j
			JOIN schedule_runs r ON r.id = (SELECT id FROM schedule_runs WHERE schedule_id = j.id ORDER BY slot DESC, attempt DESC LIMIT 1)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanRun(rows)
			if err != nil {
				return err
			}
			out[u.Schedule] = u
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: last schedule runs: %w", err)
	}
	return out, nil
}

// GetScheduleRun reads one run (ErrNotFound when there is none).
func (s *Store) GetScheduleRun(ctx context.Context, id int64) (ScheduleRun, error) {
	u, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM schedule_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("store: schedule run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return u, fmt.Errorf("store: schedule run %d: %w", id, err)
	}
	return u, nil
}

// GetScheduleDelivery reads one delivery (ErrNotFound when there is
// none).
func (s *Store) GetScheduleDelivery(ctx context.Context, id int64) (ScheduleDelivery, error) {
	d, err := scanDelivery(s.db.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM schedule_deliveries WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("store: schedule delivery %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("store: schedule delivery %d: %w", id, err)
	}
	return d, nil
}

// ScheduleDeliveries reads the deliveries with the ids given, by id.
func (s *Store) ScheduleDeliveries(ctx context.Context, ids []int64) (map[int64]ScheduleDelivery, error) {
	out := map[int64]ScheduleDelivery{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+deliveryCols+` FROM schedule_deliveries WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out[d.ID] = d
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: schedule deliveries: %w", err)
	}
	return out, nil
}

// ScheduleWake is the earliest moment something of the schedules is
// due: a job's next slot (jobs not paused), a retry, a delivery's next
// attempt. Zero when nothing is.
func (s *Store) ScheduleWake(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT min(t) FROM (
		SELECT min(next_due) AS t FROM schedules WHERE paused = 0 AND next_due IS NOT NULL
		UNION ALL SELECT min(retry_at) FROM schedule_runs WHERE retry_at IS NOT NULL
		UNION ALL SELECT min(next_attempt) FROM schedule_deliveries WHERE status = 'pending')`).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: schedule wake: %w", err)
	}
	return nullTime(next), nil
}

// UpdateSchedules runs fn in one write transaction over the schedules:
// what it reads, it reads under the write lock, so that the processes
// changing schedules (the daemon's scheduler, den schedule, the API)
// each see the others' changes whole.
func (s *Store) UpdateSchedules(ctx context.Context, fn func(tx *ScheduleTx) error) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		return fn(&ScheduleTx{ctx: ctx, tx: tx})
	})
	if err != nil {
		return fmt.Errorf("store: schedules: %w", err)
	}
	return nil
}

// ScheduleTx is a write transaction over the schedules (see
// UpdateSchedules).
type ScheduleTx struct {
	ctx context.Context
	tx  *sql.Tx
}

// Schedule reads a job (ErrNotFound when there is none).
func (t *ScheduleTx) Schedule(id int64) (Schedule, error) {
	j, err := scanSchedule(t.tx.QueryRowContext(t.ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("schedule %d: %w", id, ErrNotFound)
	}
	return j, err
}

// Count is how many jobs agent has.
func (t *ScheduleTx) Count(agent string) (int, error) {
	var n int
	err := t.tx.QueryRowContext(t.ctx, `SELECT count(*) FROM schedules WHERE agent = ?`, agent).Scan(&n)
	return n, err
}

// Due lists the ids of the jobs not paused whose next slot is due at
// now, the earliest first.
func (t *ScheduleTx) Due(now time.Time) ([]int64, error) {
	return t.ids(`SELECT id FROM schedules WHERE paused = 0 AND next_due IS NOT NULL AND next_due <= ? ORDER BY next_due, id`, now.UnixNano())
}

func (t *ScheduleTx) ids(query string, args ...any) ([]int64, error) {
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// PutSchedule inserts j (when its ID is 0, setting it) or replaces the
// job with its ID.
func (t *ScheduleTx) PutSchedule(j *Schedule) error {
	args := []any{j.Agent, j.Name, j.Kind, j.Spec, j.TZ, nanosOr0(j.Anchor), j.Prompt, j.Session, j.SessionID, j.Model, j.Budget,
		j.MaxTurns, j.Verify, j.Deliver, j.Speak, j.Approvals, j.Misfire, int64(j.Grace), int64(j.Jitter), j.Retries, j.Paused,
		j.CreatedBy, j.Created.UnixNano(), j.Updated.UnixNano(), nanosOr0(j.Accounted), nullNanos(j.NextDue)}
	if j.ID == 0 {
		res, err := t.tx.ExecContext(t.ctx, `INSERT INTO schedules (agent, name, kind, spec, tz, anchor, prompt, session, session_id,
			model, budget, max_turns, verify, deliver, speak, approvals, misfire, grace, jitter, retries, paused, created_by,
			created_at, updated_at, accounted, next_due) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if err != nil {
			return err
		}
		j.ID, err = res.LastInsertId()
		return err
	}
	res, err := t.tx.ExecContext(t.ctx, `UPDATE schedules SET agent = ?, name = ?, kind = ?, spec = ?, tz = ?, anchor = ?, prompt = ?,
		session = ?, session_id = ?, model = ?, budget = ?, max_turns = ?, verify = ?, deliver = ?, speak = ?, approvals = ?,
		misfire = ?, grace = ?, jitter = ?, retries = ?, paused = ?, created_by = ?, created_at = ?, updated_at = ?,
		accounted = ?, next_due = ? WHERE id = ?`, append(args, j.ID)...)
	if err != nil {
		return err
	}
	return affected(res, fmt.Sprintf("schedule %d", j.ID))
}

// DeleteSchedule removes a job with its runs and deliveries.
func (t *ScheduleTx) DeleteSchedule(id int64) error {
	res, err := t.tx.ExecContext(t.ctx, `DELETE FROM schedules WHERE id = ?`, id)
	if err != nil {
		return err
	}
	return affected(res, fmt.Sprintf("schedule %d", id))
}

// affected is mustAffect naming what was not found.
func affected(res sql.Result, what string) error {
	if err := mustAffect(res); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// AddRun inserts u unless its (job, slot, attempt) has a row already,
// and reports whether it did; u.ID is set when it did. This is the
// claim: of two processes accounting for one slot, one inserts.
func (t *ScheduleTx) AddRun(u *ScheduleRun) (bool, error) {
	added, err := t.AddRuns([]*ScheduleRun{u})
	if err != nil {
		return false, err
	}
	return added[0], nil
}

// AddRuns is AddRun for each of us, inserting them in batches (run-all
// queues every slot a catch-up finds); it reports, in order, which it
// inserted.
func (t *ScheduleTx) AddRuns(us []*ScheduleRun) ([]bool, error) {
	const cols = 15
	const batch = 200
	type key struct {
		schedule, slot int64
		attempt        int
	}
	added := make([]bool, len(us))
	at := map[key]int{}
	for start := 0; start < len(us); start += batch {
		chunk := us[start:min(start+batch, len(us))]
		args := make([]any, 0, cols*len(chunk))
		clear(at)
		for i, u := range chunk {
			at[key{u.Schedule, u.Slot.UnixNano(), u.Attempt}] = start + i
			args = append(args, u.Schedule, u.Slot.UnixNano(), u.Attempt, u.Due.UnixNano(), u.Cause, u.Status, u.Reason,
				nullNanos(u.Started), nullNanos(u.Ended), u.Session, micros(u.CostUSD), u.Answer, nullNanos(u.RetryAt), nullID(u.Delivery), u.Owner)
		}
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")
		rows, err := t.tx.QueryContext(t.ctx, `INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status, reason,
			started, ended, session_id, cost_micro_usd, answer, retry_at, delivery_id, owner) VALUES `+values+`
			ON CONFLICT (schedule_id, slot, attempt) DO NOTHING RETURNING id, schedule_id, slot, attempt`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var k key
			if err := rows.Scan(&id, &k.schedule, &k.slot, &k.attempt); err != nil {
				rows.Close()
				return nil, err
			}
			if i, ok := at[k]; ok {
				us[i].ID, added[i] = id, true
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return added, nil
}

// AddSlots inserts, for each of slots that has no row for u's attempt
// yet, a row like u but for that slot, due as long after it as u.Due is
// after u.Slot; it reports how many it inserted, and sets no ids. It is
// for the many alike rows of a catch-up (the slots a job missed while
// den was down), which nothing claims to run: their slots travel as a
// JSON array, a statement for thousands of rows, rather than every
// column of every row as a bound value.
func (t *ScheduleTx) AddSlots(u ScheduleRun, slots []time.Time) (int, error) {
	const batch = 10000 // slots a statement: a bounded array of at most 200 KB
	offset := int64(u.Due.Sub(u.Slot))
	var list []byte
	n := 0
	for start := 0; start < len(slots); start += batch {
		list = append(list[:0], '[')
		for i, s := range slots[start:min(start+batch, len(slots))] {
			if i > 0 {
				list = append(list, ',')
			}
			list = strconv.AppendInt(list, s.UnixNano(), 10)
		}
		list = append(list, ']')
		// "WHERE true" tells the parser that ON CONFLICT is the upsert's.
		res, err := t.tx.ExecContext(t.ctx, `INSERT INTO schedule_runs (schedule_id, slot, attempt, due, cause, status, reason,
			started, ended, session_id, cost_micro_usd, answer, retry_at, delivery_id, owner)
			SELECT ?, value, ?, value + ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM json_each(?) WHERE true
			ON CONFLICT (schedule_id, slot, attempt) DO NOTHING`,
			u.Schedule, u.Attempt, offset, u.Cause, u.Status, u.Reason, nullNanos(u.Started), nullNanos(u.Ended), u.Session,
			micros(u.CostUSD), u.Answer, nullNanos(u.RetryAt), nullID(u.Delivery), u.Owner, string(list))
		if err != nil {
			return n, err
		}
		added, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += int(added)
	}
	return n, nil
}

func nullID(id int64) sql.NullInt64 { return sql.NullInt64{Int64: id, Valid: id != 0} }

// Run reads a run (ErrNotFound when there is none).
func (t *ScheduleTx) Run(id int64) (ScheduleRun, error) {
	u, err := scanRun(t.tx.QueryRowContext(t.ctx, `SELECT `+runCols+` FROM schedule_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("schedule run %d: %w", id, ErrNotFound)
	}
	return u, err
}

// PutRun replaces the run with u's ID.
func (t *ScheduleTx) PutRun(u ScheduleRun) error {
	res, err := t.tx.ExecContext(t.ctx, `UPDATE schedule_runs SET due = ?, cause = ?, status = ?, reason = ?, started = ?, ended = ?,
		session_id = ?, cost_micro_usd = ?, answer = ?, retry_at = ?, delivery_id = ?, owner = ? WHERE id = ?`,
		u.Due.UnixNano(), u.Cause, u.Status, u.Reason, nullNanos(u.Started), nullNanos(u.Ended), u.Session, micros(u.CostUSD),
		u.Answer, nullNanos(u.RetryAt), nullID(u.Delivery), u.Owner, u.ID)
	if err != nil {
		return err
	}
	return affected(res, fmt.Sprintf("schedule run %d", u.ID))
}

// Runs lists the runs with status among statuses (of job schedule; 0
// for every job), by due time. Only the statuses a run stays in while
// it is not over may be asked for: queued and running.
func (t *ScheduleTx) Runs(schedule int64, statuses ...string) ([]ScheduleRun, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	// The statuses are written into the query, not bound: SQLite uses
	// the partial index of live runs only for a condition it can see
	// implies the index's.
	var in []string
	for _, s := range statuses {
		if s != "queued" && s != "running" {
			return nil, fmt.Errorf("runs with status %q: only queued and running are indexed", s)
		}
		in = append(in, "'"+s+"'")
	}
	where := "status IN (" + strings.Join(in, ", ") + ")"
	if schedule == 0 {
		return t.runs(`SELECT ` + runCols + ` FROM schedule_runs WHERE ` + where + ` ORDER BY due, id`)
	}
	return t.runs(`SELECT `+runCols+` FROM schedule_runs WHERE `+where+` AND schedule_id = ? ORDER BY due, id`, schedule)
}

// RetriesDue lists the runs whose retry is due at now.
func (t *ScheduleTx) RetriesDue(now time.Time) ([]ScheduleRun, error) {
	return t.runs(`SELECT `+runCols+` FROM schedule_runs WHERE retry_at IS NOT NULL AND retry_at <= ? ORDER BY retry_at, id`, now.UnixNano())
}

// LastRun is the job's newest row (latest slot, latest attempt); false
// when it has none.
func (t *ScheduleTx) LastRun(schedule int64) (ScheduleRun, bool, error) {
	u, err := scanRun(t.tx.QueryRowContext(t.ctx, `SELECT `+runCols+` FROM schedule_runs WHERE schedule_id = ?
		ORDER BY slot DESC, attempt DESC LIMIT 1`, schedule))
	if errors.Is(err, sql.ErrNoRows) {
		return u, false, nil
	}
	return u, err == nil, err
}

func (t *ScheduleTx) runs(query string, args ...any) ([]ScheduleRun, error) {
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanRows(rows, scanRun)
}

// PruneRuns deletes the job's runs that ended before before, keeping
// its newest keep rows whatever their age, and the rows that are not
// over (queued, running, or waiting for a retry).
func (t *ScheduleTx) PruneRuns(schedule int64, before time.Time, keep int) error {
	var kept int64
	err := t.tx.QueryRowContext(t.ctx, `SELECT slot FROM schedule_runs WHERE schedule_id = ? ORDER BY slot DESC, attempt DESC
		LIMIT 1 OFFSET ?`, schedule, max(keep-1, 0)).Scan(&kept)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // fewer rows than keep
	}
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(t.ctx, `DELETE FROM schedule_runs WHERE schedule_id = ? AND slot < ? AND slot < ?
		AND status NOT IN ('queued', 'running') AND retry_at IS NULL`, schedule, before.UnixNano(), kept)
	return err
}

// AddDelivery inserts d and sets its ID.
func (t *ScheduleTx) AddDelivery(d *ScheduleDelivery) error {
	res, err := t.tx.ExecContext(t.ctx, `INSERT INTO schedule_deliveries (schedule_id, kind, title, body, session_id, speak, status,
		attempts, next_attempt, detail, error, reached, created_at, delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Schedule, d.Kind, d.Title, d.Body, d.Session, d.Speak, d.Status, d.Attempts, nullNanos(d.NextAttempt), d.Detail, d.Error,
		strings.Join(d.Reached, "\n"), d.Created.UnixNano(), nullNanos(d.Delivered))
	if err != nil {
		return err
	}
	d.ID, err = res.LastInsertId()
	return err
}

// Delivery reads a delivery (ErrNotFound when there is none).
func (t *ScheduleTx) Delivery(id int64) (ScheduleDelivery, error) {
	d, err := scanDelivery(t.tx.QueryRowContext(t.ctx, `SELECT `+deliveryCols+` FROM schedule_deliveries WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("schedule delivery %d: %w", id, ErrNotFound)
	}
	return d, err
}

// PutDelivery replaces the delivery with d's ID.
func (t *ScheduleTx) PutDelivery(d ScheduleDelivery) error {
	res, err := t.tx.ExecContext(t.ctx, `UPDATE schedule_deliveries SET status = ?, attempts = ?, next_attempt = ?, detail = ?,
		error = ?, reached = ?, delivered_at = ? WHERE id = ?`,
		d.Status, d.Attempts, nullNanos(d.NextAttempt), d.Detail, d.Error, strings.Join(d.Reached, "\n"), nullNanos(d.Delivered), d.ID)
	if err != nil {
		return err
	}
	return affected(res, fmt.Sprintf("schedule delivery %d", d.ID))
}

// DeliveriesDue lists the pending deliveries whose next attempt is due
// at now.
func (t *ScheduleTx) DeliveriesDue(now time.Time) ([]ScheduleDelivery, error) {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT `+deliveryCols+` FROM schedule_deliveries
		WHERE status = 'pending' AND next_attempt <= ? ORDER BY next_attempt, id`, now.UnixNano())
	if err != nil {
		return nil, err
	}
	return scanRows(rows, scanDelivery)
}

// ReleaseDeliveries makes every pending delivery due at now: the
// attempts a stopped den leased are over.
func (t *ScheduleTx) ReleaseDeliveries(now time.Time) error {
	_, err := t.tx.ExecContext(t.ctx, `UPDATE schedule_deliveries SET next_attempt = ? WHERE status = 'pending' AND next_attempt > ?`,
		now.UnixNano(), now.UnixNano())
	return err
}

// Event stores an event of no session in the same transaction: typ and
// v's JSON object (see package event), so that what changed and the
// event saying so are committed together.
func (t *ScheduleTx) Event(typ string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	_, err = t.tx.ExecContext(t.ctx, `INSERT INTO events (session_id, type, time, data) VALUES (NULL, ?, ?, ?)`, typ, now(), string(data))
	return err
}

// prefixed puts p before each column of a list.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
