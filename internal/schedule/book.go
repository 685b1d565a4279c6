package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/store"
)

// Book is the schedules as the faces manage them (den schedule, the
// API, den-schedule in a computer): it checks what they give, keeps
// every slot accounted for across changes, and stores the event that
// wakes the scheduler, in the transaction of each change.
//
// Every method takes the agent it acts for: "" for the user, who may
// act on every job; an agent's name for den-schedule, which sees and
// changes only that agent's jobs (another agent's job is "not found").
type Book struct {
	Store Store
	Clock Clock // nil: WallClock
	// Wake, when set, is told after each change (den serve wakes its
	// scheduler at once rather than when it reads the event).
	Wake func()
}

func (b *Book) now() time.Time {
	if b.Clock == nil {
		return time.Now()
	}
	return b.Clock.Now()
}

func (b *Book) woke() {
	if b.Wake != nil {
		b.Wake()
	}
}

// errNoJob is what an agent's view of another agent's job, or a job
// that does not exist, gives.
func errNoJob(id int64) error { return fmt.Errorf("no schedule %d: %w", id, store.ErrNotFound) }

// job reads job id as agent may see it.
func job(tx *store.ScheduleTx, agent string, id int64) (store.Schedule, error) {
	j, err := tx.Schedule(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && agent != "" && j.Agent != agent) {
		return store.Schedule{}, errNoJob(id)
	}
	return j, err
}

func changed(tx *store.ScheduleTx, j store.Schedule, change string) error {
	ev := &Changed{Schedule: j.ID, Agent: j.Agent, Name: title(j), Change: change}
	return tx.Event(ev.Type(), ev)
}

// Add makes a job of agent. by says who asked: "user", or "agent" and
// the session for den-schedule (which may have at most
// MaxJobsPerAgent).
func (b *Book) Add(ctx context.Context, agent, by string, p Params) (JobView, error) {
	if agent == "" {
		return JobView{}, bad("which agent runs the job?")
	}
	if !p.When.Given() {
		return JobView{}, bad("say when with --cron, --every, --at or --in")
	}
	now := b.now()
	w, err := p.When.Resolve(now)
	if err != nil {
		return JobView{}, fmt.Errorf("%w: %w", ErrBadParams, err)
	}
	j := newJob(agent, by, now)
	j.Kind, j.Spec, j.TZ, j.Anchor = w.Kind, w.Spec, w.TZ, w.Anchor
	if w.Kind == Cron {
		j.Jitter = DefaultJitter
	}
	if err := p.apply(&j); err != nil {
		return JobView{}, err
	}
	err = b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		if by != "user" {
			n, err := tx.Count(agent)
			if err != nil {
				return err
			}
			if n >= MaxJobsPerAgent {
				return bad("the agent has %d jobs, the most it may have: remove one first", n)
			}
		}
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		// The jitter is drawn from the id, which the insert gave.
		j.NextDue = nextDue(j, w, j.Accounted)
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		return changed(tx, j, "added")
	})
	if err != nil {
		return JobView{}, err
	}
	b.woke()
	return view(j, nil, nil), nil
}

// Edit changes job id. A new when-spec counts from now: the slots of
// the old one that passed without a row (den was not running) are
// recorded missed first.
func (b *Book) Edit(ctx context.Context, agent string, id int64, p Params) (JobView, error) {
	now := b.now()
	var j store.Schedule
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) (err error) {
		if j, err = job(tx, agent, id); err != nil {
			return err
		}
		spec := p.When
		if !spec.Given() && spec.TZ != "" {
			if j.Kind != Cron && j.Kind != At {
				return bad("--tz goes with a cron expression or a one-shot time; this job runs %s", j.Kind)
			}
			if j.Kind == At {
				return bad("to move a one-shot time to another zone, give --at again with --tz")
			}
			spec.Cron = j.Spec
		}
		respec := spec.Given()
		var w When
		if respec {
			if w, err = spec.Resolve(now); err != nil {
				return fmt.Errorf("%w: %w", ErrBadParams, err)
			}
			if err := settle(tx, j, now, "not run before the job's when-spec was changed"); err != nil {
				return err
			}
			oldKind := j.Kind
			j.Kind, j.Spec, j.TZ, j.Anchor, j.Accounted = w.Kind, w.Spec, w.TZ, w.Anchor, now
			if w.Kind == Cron && oldKind != Cron && p.Jitter == nil {
				j.Jitter = DefaultJitter
			} else if w.Kind != Cron && oldKind == Cron && p.Jitter == nil {
				j.Jitter = 0
			}
		} else if w, err = when(j); err != nil {
			return fmt.Errorf("%w: %w (give a new when-spec)", ErrBadParams, err)
		}
		if err := p.apply(&j); err != nil {
			return err
		}
		if j.Session == "" {
			j.SessionID = ""
		}
		if !j.NextDue.IsZero() || respec {
			j.NextDue = nextDue(j, w, j.Accounted)
		}
		j.Updated = now
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		return changed(tx, j, "changed")
	})
	if err != nil {
		return JobView{}, err
	}
	b.woke()
	return b.Get(ctx, agent, id)
}

// settle records as missed, with reason, the slots of j that are due
// at now and have no row: a change to the job is about to move its
// cursor past them. While den serve runs, it has accounted for them
// already and there are none.
func settle(tx *store.ScheduleTx, j store.Schedule, now time.Time, reason string) error {
	if j.Paused || j.NextDue.IsZero() || j.NextDue.After(now) {
		return nil
	}
	w, err := when(j)
	if err != nil {
		return nil // nothing can be read of the old spec
	}
	var slots []time.Time
	jit := jitter(j)
	for s := j.Accounted; ; {
		s = w.Next(s)
		if s.IsZero() || s.Add(jit).After(now) {
			break
		}
		slots = append(slots, s)
	}
	if len(slots) == 0 {
		return nil
	}
	_, err = tx.AddSlots(store.ScheduleRun{Schedule: j.ID, Slot: slots[0], Attempt: 1, Due: slots[0].Add(jit), Cause: CauseTime,
		Status: Missed, Reason: "den was not running; " + reason, Ended: now}, slots)
	return err
}

// Remove deletes job id with its history. A run in progress goes on in
// its session; its end is not recorded.
func (b *Book) Remove(ctx context.Context, agent string, id int64) error {
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		j, err := job(tx, agent, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteSchedule(id); err != nil {
			return err
		}
		return changed(tx, j, "removed")
	})
	if err == nil {
		b.woke()
	}
	return err
}

// Pause stops job id's slots until Resume: runs waiting to start are
// skipped; a run in progress goes on.
func (b *Book) Pause(ctx context.Context, agent string, id int64) (JobView, error) {
	now := b.now()
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		j, err := job(tx, agent, id)
		if err != nil || j.Paused {
			return err
		}
		if err := settle(tx, j, now, "not run before the job was paused"); err != nil {
			return err
		}
		queued, err := tx.Runs(j.ID, Queued)
		if err != nil {
			return err
		}
		for _, u := range queued {
			u.Status, u.Reason, u.Ended = Skipped, "the job was paused before it started", now
			if err := tx.PutRun(u); err != nil {
				return err
			}
		}
		j.Paused, j.Updated = true, now
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		return changed(tx, j, "paused")
	})
	if err != nil {
		return JobView{}, err
	}
	b.woke()
	return b.Get(ctx, agent, id)
}

// Resume starts job id's slots again from now: the slots of the pause
// were not due, and have no rows.
func (b *Book) Resume(ctx context.Context, agent string, id int64) (JobView, error) {
	now := b.now()
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		j, err := job(tx, agent, id)
		if err != nil || !j.Paused {
			return err
		}
		w, err := when(j)
		if err != nil {
			return fmt.Errorf("%w: %w (give a new when-spec)", ErrBadParams, err)
		}
		j.Paused, j.Updated = false, now
		if j.Kind == At && !j.Anchor.After(now) && j.Anchor.After(j.Accounted) {
			// A one-shot time that passed while the job was paused: it
			// is not run, and it is accounted for.
			u := &store.ScheduleRun{Schedule: j.ID, Slot: j.Anchor, Attempt: 1, Due: j.Anchor.Add(jitter(j)), Cause: CauseTime,
				Status: Missed, Reason: "its time passed while the job was paused", Ended: now}
			if _, err := tx.AddRun(u); err != nil {
				return err
			}
			j.Accounted = j.Anchor
		} else {
			j.Accounted = now
		}
		j.NextDue = nextDue(j, w, j.Accounted)
		if err := tx.PutSchedule(&j); err != nil {
			return err
		}
		return changed(tx, j, "resumed")
	})
	if err != nil {
		return JobView{}, err
	}
	b.woke()
	return b.Get(ctx, agent, id)
}

// RunNow queues a run of job id now, paused or not: den serve's
// scheduler starts it as soon as the job has no other run in progress.
func (b *Book) RunNow(ctx context.Context, agent string, id int64) (RunView, error) {
	now := b.now()
	var u store.ScheduleRun
	var j store.Schedule
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) (err error) {
		if j, err = job(tx, agent, id); err != nil {
			return err
		}
		for slot := now; ; slot = slot.Add(time.Nanosecond) {
			u = store.ScheduleRun{Schedule: j.ID, Slot: slot, Attempt: 1, Due: now, Cause: CauseManual, Status: Queued}
			added, err := tx.AddRun(&u)
			if err != nil {
				return err
			}
			if added {
				break
			}
		}
		if err := runEvent(tx, j, u); err != nil {
			return err
		}
		return changed(tx, j, "run")
	})
	if err != nil {
		return RunView{}, err
	}
	b.woke()
	return runView(u, nil, j), nil
}

// Stop stops job id's run in progress (only run, when run is not 0).
// Its row ends now, failed, "stopped by the user", and is not retried;
// a job that delivers its answers delivers a note that the run was
// stopped instead (one that delivers nothing delivers nothing: the
// person who stopped it knows). den serve's scheduler, which runs the
// run, sees the row end when the change wakes it, cancels the run's
// turn as a person's cancel of its session does, and adds what the
// turn cost and answered to the row once the turn has ended. A row left
// running by a den that was killed has no turn to cancel: it is
// recorded stopped all the same, and not retried at den's next start.
// Runs waiting to start are left to start (pausing the job skips them).
// Stop gives ErrNotRunning when no such run is in progress.
func (b *Book) Stop(ctx context.Context, agent string, id, run int64) ([]RunView, error) {
	now := b.now()
	var j store.Schedule
	var stopped []store.ScheduleRun
	err := b.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) (err error) {
		if j, err = job(tx, agent, id); err != nil {
			return err
		}
		running, err := tx.Runs(j.ID, Running)
		if err != nil {
			return err
		}
		for _, u := range running {
			if run != 0 && u.ID != run {
				continue
			}
			u.Status, u.Ended, u.RetryAt = Failed, now, time.Time{}
			because(&u, stoppedBy(agent))
			if j.Deliver == DeliverNotify {
				body := "The run was " + stoppedBy(agent) + "."
				if u.Session != "" {
					body += " Its session has what the agent did until then."
				}
				if u.Delivery, err = addDelivery(tx, j, "failure", title(j)+" stopped", body, u.Session, false, now); err != nil {
					return err
				}
			}
			if err := tx.PutRun(u); err != nil {
				return err
			}
			if err := runEvent(tx, j, u); err != nil {
				return err
			}
			stopped = append(stopped, u)
		}
		switch {
		case len(stopped) == 0 && run != 0:
			return fmt.Errorf("run %d of schedule %d is not in progress: %w", run, id, ErrNotRunning)
		case len(stopped) == 0:
			return fmt.Errorf("schedule %d has no run in progress: %w", id, ErrNotRunning)
		}
		return changed(tx, j, "stopped")
	})
	if err != nil {
		return nil, err
	}
	b.woke()
	var ids []int64
	for _, u := range stopped {
		if u.Delivery != 0 {
			ids = append(ids, u.Delivery)
		}
	}
	ds, err := b.Store.ScheduleDeliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]RunView, 0, len(stopped))
	for _, u := range stopped {
		out = append(out, runView(u, ds, j))
	}
	return out, nil
}

// stoppedBy is a stopped run's reason: the user's stop, or the agent's
// (den-schedule).
func stoppedBy(agent string) string {
	if agent != "" {
		return "stopped by the agent"
	}
	return ErrStopped.Error()
}

// List is the jobs of agent ("" for every agent), with each one's
// newest run.
func (b *Book) List(ctx context.Context, agent string) ([]JobView, error) {
	jobs, err := b.Store.Schedules(ctx, agent)
	if err != nil {
		return nil, err
	}
	last, err := b.Store.LastScheduleRuns(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, u := range last {
		if u.Delivery != 0 {
			ids = append(ids, u.Delivery)
		}
	}
	ds, err := b.Store.ScheduleDeliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]JobView, 0, len(jobs))
	for _, j := range jobs {
		var lp *store.ScheduleRun
		if u, ok := last[j.ID]; ok {
			lp = &u
		}
		out = append(out, view(j, lp, ds))
	}
	return out, nil
}

// Get is job id with its newest run.
func (b *Book) Get(ctx context.Context, agent string, id int64) (JobView, error) {
	j, err := b.Store.GetSchedule(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && agent != "" && j.Agent != agent) {
		return JobView{}, errNoJob(id)
	}
	if err != nil {
		return JobView{}, err
	}
	runs, err := b.Store.ScheduleRuns(ctx, store.RunQuery{Schedule: id, Limit: 1})
	if err != nil {
		return JobView{}, err
	}
	var lp *store.ScheduleRun
	var ds map[int64]store.ScheduleDelivery
	if len(runs) == 1 {
		lp = &runs[0]
		if ds, err = b.Store.ScheduleDeliveries(ctx, []int64{lp.Delivery}); err != nil {
			return JobView{}, err
		}
	}
	return view(j, lp, ds), nil
}

// History is the runs of job id (0: of every job agent may see), the
// newest first: limit of them (0: 100), with ids below before (0: the
// newest).
func (b *Book) History(ctx context.Context, agent string, id int64, limit int, before int64) ([]RunView, error) {
	jobs := map[int64]store.Schedule{}
	if id != 0 {
		j, err := b.Store.GetSchedule(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && agent != "" && j.Agent != agent) {
			return nil, errNoJob(id)
		}
		if err != nil {
			return nil, err
		}
		jobs[id] = j
	} else {
		list, err := b.Store.Schedules(ctx, agent)
		if err != nil {
			return nil, err
		}
		for _, j := range list {
			jobs[j.ID] = j
		}
	}
	runs, err := b.Store.ScheduleRuns(ctx, store.RunQuery{Schedule: id, Agent: agent, Limit: limit, Before: before})
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, u := range runs {
		if u.Delivery != 0 {
			ids = append(ids, u.Delivery)
		}
	}
	ds, err := b.Store.ScheduleDeliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]RunView, 0, len(runs))
	for _, u := range runs {
		out = append(out, runView(u, ds, jobs[u.Schedule]))
	}
	return out, nil
}
