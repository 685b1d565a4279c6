package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/store"
)

// maxAnswer bounds the answer a run row keeps (the session has it all).
const maxAnswer = 16 << 10

// start claims the queued runs there is room for, the earliest due
// first, at most one per job at a time, and starts them. A claim is the
// row's change from queued to running, in a write transaction that
// reads the row again: it happens once. A job whose stopped run still
// winds down here counts as running.
func (e *Engine) start(ctx context.Context) error {
	type claimed struct {
		j store.Schedule
		u store.ScheduleRun
	}
	var started []claimed
	err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		queued, err := tx.Runs(0, Queued)
		if err != nil || len(queued) == 0 {
			return err
		}
		busy := map[int64]bool{}
		running, err := tx.Runs(0, Running)
		if err != nil {
			return err
		}
		for _, u := range running {
			busy[u.Schedule] = true
		}
		e.mu.Lock()
		room := e.o.MaxRunning - len(e.running)
		for _, r := range e.running {
			busy[r.job] = true
		}
		e.mu.Unlock()
		now := e.o.Clock.Now()
		for _, u := range queued {
			if room <= 0 {
				break
			}
			if busy[u.Schedule] {
				continue
			}
			j, err := tx.Schedule(u.Schedule)
			if err != nil {
				return err
			}
			u.Status, u.Started, u.Owner = Running, now, e.o.Owner
			if late := now.Sub(u.Due); late >= time.Second && u.Cause == CauseTime {
				u.Reason = fmt.Sprintf("started %s late: %d runs were running", round(late), e.o.MaxRunning)
			}
			if err := tx.PutRun(u); err != nil {
				return err
			}
			if err := runEvent(tx, j, u); err != nil {
				return err
			}
			busy[u.Schedule] = true
			room--
			started = append(started, claimed{j, u})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range started {
		runCtx, stop := context.WithCancelCause(e.runCtx)
		e.mu.Lock()
		e.running[c.u.ID] = liveRun{job: c.j.ID, stop: stop}
		e.mu.Unlock()
		e.wg.Add(1)
		go e.execute(runCtx, c.j, c.u)
	}
	return nil
}

// cancelStopped cancels, with ErrStopped as the cause, the runs of this
// engine whose rows ended while they ran: a person stopped them
// (Book.Stop, in this process or another). A run whose row went with
// its job (Remove) goes on.
func (e *Engine) cancelStopped(ctx context.Context) error {
	e.mu.Lock()
	ids := make([]int64, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	var stopped []int64
	for _, id := range ids {
		u, err := e.o.Store.GetScheduleRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if u.Status != Running {
			stopped = append(stopped, id)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range stopped {
		if r, ok := e.running[id]; ok {
			e.o.Log.Info("scheduler: run stopped", "schedule", r.job, "run", id)
			r.stop(ErrStopped)
		}
	}
	return nil
}

// execute runs a claimed run and records how it ended: as run says,
// or, for a run a person stopped meanwhile, as the stop recorded it,
// with what the turn cost and answered.
func (e *Engine) execute(ctx context.Context, j store.Schedule, u store.ScheduleRun) {
	defer e.wg.Done()
	defer e.Wake()
	defer func() {
		e.mu.Lock()
		if r, ok := e.running[u.ID]; ok {
			r.stop(nil)
			delete(e.running, u.ID)
		}
		e.mu.Unlock()
	}()
	retryable, cost := e.run(ctx, j, &u)
	u.Ended = e.o.Clock.Now()
	e.mu.Lock()
	if u.Session != "" {
		e.sessions[u.Session] = time.Now()
	}
	e.mu.Unlock()
	err := e.o.Store.UpdateSchedules(context.WithoutCancel(ctx), func(tx *store.ScheduleTx) error {
		cur, err := tx.Schedule(j.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // removed while it ran: its history went with it
		}
		if err != nil {
			return err
		}
		row, err := tx.Run(u.ID)
		if err != nil {
			return err
		}
		if row.Status != Running {
			// A person stopped the run, which recorded how it ended:
			// what the turn cost and answered is added to that.
			row.Session, row.Answer, row.Ended = u.Session, u.Answer, u.Ended
			row.CostUSD += cost
			if err := tx.PutRun(row); err != nil {
				return err
			}
			u = row
			return runEvent(tx, cur, row)
		}
		return e.finish(tx, cur, &u, retryable, cost, u.Ended)
	})
	if err != nil {
		e.o.Log.Error("scheduler: run not recorded", "schedule", j.ID, "run", u.ID, "status", u.Status, "err", err)
	}
}

// run runs u's turn and verification, setting u's status, reason,
// session and answer; it reports whether a failure may be retried and
// what the turn cost.
func (e *Engine) run(ctx context.Context, j store.Schedule, u *store.ScheduleRun) (retryable bool, cost float64) {
	sess, err := e.o.Runner.Session(ctx, j)
	if err != nil {
		u.Status = Failed
		if ctx.Err() != nil {
			u.Status = Interrupted
		}
		because(u, "the session could not be made: "+err.Error())
		return true, 0
	}
	u.Session = sess
	e.mu.Lock()
	e.sessions[sess] = time.Time{}
	e.mu.Unlock()
	err = e.o.Store.UpdateSchedules(context.WithoutCancel(ctx), func(tx *store.ScheduleTx) error {
		cur, err := tx.Schedule(j.ID)
		if err != nil {
			return err
		}
		if j.Session != "" && cur.SessionID != sess {
			cur.SessionID = sess
			if err := tx.PutSchedule(&cur); err != nil {
				return err
			}
		}
		// The row is read again: a person may have stopped the run.
		row, err := tx.Run(u.ID)
		if err != nil {
			return err
		}
		row.Session = sess
		if err := tx.PutRun(row); err != nil {
			return err
		}
		return runEvent(tx, cur, row)
	})
	if err != nil {
		e.o.Log.Warn("scheduler: the run's session not recorded", "run", u.ID, "err", err)
	}
	if ctx.Err() != nil {
		// Stopped, or den stops, while the session was made: the prompt
		// is not sent.
		u.Status = Interrupted
		because(u, "den stopped before the turn began")
		return true, 0
	}
	t := e.o.Runner.Turn(ctx, sess, j, e.prompt(j, *u))
	u.Answer = cut(t.Answer, maxAnswer)
	switch {
	case t.Interrupted:
		u.Status = Interrupted
		because(u, firstOf(t.Reason, "den stopped during the run"))
		return true, t.CostUSD
	case !t.Ended:
		u.Status = Failed
		because(u, firstOf(t.Reason, "the agent did not end its turn"))
		return t.Retryable, t.CostUSD
	}
	because(u, t.Note)
	if j.Verify == "" {
		u.Status = OK
		return false, t.CostUSD
	}
	v := e.o.Runner.Verify(ctx, sess, j.Verify)
	switch {
	case v.Interrupted:
		u.Status = Interrupted
		because(u, "den stopped during the verification")
		return true, t.CostUSD
	case v.Err != nil:
		u.Status = Failed
		because(u, "the verification could not run: "+v.Err.Error())
		return true, t.CostUSD
	case v.Exit != 0:
		u.Status = Failed
		why := fmt.Sprintf("the verification exited %d", v.Exit)
		if out := strings.TrimSpace(v.Output); out != "" {
			why += ": " + cut(out, 500)
		}
		because(u, why)
		return false, t.CostUSD
	}
	u.Status = OK
	because(u, "verified")
	return false, t.CostUSD
}

// because adds why to what u's reason says already (that it started
// late, say).
func because(u *store.ScheduleRun, why string) {
	switch {
	case why == "":
	case u.Reason == "":
		u.Reason = why
	default:
		u.Reason += "; " + why
	}
}

// prompt is what a run sends: the job's prompt, and when the run
// starts late, a line saying so (a digest that runs at noon should know
// it was due at 07:00).
func (e *Engine) prompt(j store.Schedule, u store.ScheduleRun) string {
	late := u.Started.Sub(u.Due)
	if late < time.Minute {
		return j.Prompt
	}
	loc := time.UTC
	if z, err := LoadZone(firstOf(j.TZ, localZoneOr("UTC"))); err == nil {
		loc = z
	}
	return fmt.Sprintf("%s\n\n(den: this scheduled run was due at %s and starts %s late.)", j.Prompt,
		u.Due.In(loc).Format("Mon Jan 2 15:04 MST"), round(late))
}

// finish records how u ended: its row (with a retry when it failed in
// a way that may pass and the job has attempts left), the event, and
// the message to the user: the answer of a run that succeeded (unless
// the job delivers nothing), the failure of one that failed for good.
func (e *Engine) finish(tx *store.ScheduleTx, j store.Schedule, u *store.ScheduleRun, retryable bool, cost float64, now time.Time) error {
	u.CostUSD += cost
	retry := (u.Status == Failed || u.Status == Interrupted) && retryable && u.Attempt <= j.Retries
	if retry {
		delay := time.Duration(0)
		if u.Status == Failed {
			delay = retryDelays[min(u.Attempt-1, len(retryDelays)-1)]
		}
		u.RetryAt = now.Add(delay)
	}
	if !retry {
		var err error
		switch {
		case u.Status == OK && j.Deliver == DeliverNotify:
			body := strings.TrimSpace(u.Answer)
			if body == "" {
				body = "Done (no answer)."
			}
			u.Delivery, err = addDelivery(tx, j, "result", title(j), body, u.Session, j.Speak, now)
		case u.Status == Failed || u.Status == Interrupted:
			body := fmt.Sprintf("The run %s: %s.", map[string]string{Failed: "failed", Interrupted: "was interrupted"}[u.Status], u.Reason)
			if u.Attempt > 1 {
				body += fmt.Sprintf(" That was attempt %d of %d.", u.Attempt, j.Retries+1)
			}
			u.Delivery, err = addDelivery(tx, j, "failure", title(j)+" failed", body, u.Session, false, now)
		}
		if err != nil {
			return err
		}
	}
	if err := tx.PutRun(*u); err != nil {
		return err
	}
	return runEvent(tx, j, *u)
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// cut shortens s to at most n bytes, on a character boundary, marking
// the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
