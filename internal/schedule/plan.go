package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/store"
)

// planBatch bounds the rows one transaction of plan inserts: a
// catch-up after a long downtime commits in pieces, not holding the
// write lock for long.
const planBatch = 20000

// plan accounts for every slot of the due jobs ids that is due at now
// and has no row yet, in transactions that also move each job's cursor:
// each slot gets a row, once, whatever else accounts for it (another
// den, a den schedule edit). Which rows run:
//
//   - one slot due, within the job's grace window: it runs;
//   - slots that came while nothing could run them (den was not
//     running, the machine slept), or several at once: the misfire
//     policy decides. run-once runs the newest and records the others
//     missed; run-all runs every one, in order; skip records them
//     missed, but for the newest if it is still within the grace
//     window. A run started late says so.
//   - a slot that comes while the job's previous run still runs (or
//     waits) is skipped, not stacked, unless the policy is run-all.
//
// Missed and skipped slots are told to the user in one message per job.
//
// A job that cannot be planned (its transaction fails) is put off for a
// minute, so that it neither holds the others back nor has the engine
// wake for it at once, again and again.
func (e *Engine) plan(ctx context.Context, ids []int64, now time.Time) {
	for len(ids) > 0 {
		done := 0
		err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
			done = 0
			for rows := 0; done < len(ids) && rows < planBatch; done++ {
				n, err := e.planJob(tx, ids[done], now)
				if err != nil {
					return err
				}
				rows += n
			}
			return nil
		})
		if err == nil {
			ids = ids[done:]
			continue
		}
		if ctx.Err() != nil {
			return
		}
		for _, id := range ids {
			err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
				_, err := e.planJob(tx, id, now)
				return err
			})
			if err != nil {
				e.o.Log.Error("scheduler: job not planned; it is tried again in a minute", "schedule", id, "err", err)
				e.putOff(ctx, id, now.Add(time.Minute))
			}
		}
		return
	}
}

// putOff moves job id's next due time to at.
func (e *Engine) putOff(ctx context.Context, id int64, at time.Time) {
	err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		j, err := tx.Schedule(id)
		if err != nil {
			return err
		}
		j.NextDue = at
		return tx.PutSchedule(&j)
	})
	if err != nil {
		e.o.Log.Error("scheduler: job not put off", "schedule", id, "err", err)
	}
}

// planJob is plan for one job, in tx; it returns the rows it inserted.
func (e *Engine) planJob(tx *store.ScheduleTx, id int64, now time.Time) (int, error) {
	j, err := tx.Schedule(id)
	if err != nil {
		return 0, err
	}
	if j.Paused || j.NextDue.IsZero() || j.NextDue.After(now) {
		return 0, nil // changed meanwhile
	}
	w, err := when(j)
	if err != nil {
		// A job den cannot read any more (a time zone gone from the
		// system's database) stops, and says so.
		j.NextDue = time.Time{}
		if err := tx.PutSchedule(&j); err != nil {
			return 0, err
		}
		return 0, missedDelivery(tx, j, fmt.Sprintf("%s cannot run any more: %v. Edit its when-spec.", title(j), err), now)
	}
	live, err := tx.Runs(j.ID, Queued, Running)
	if err != nil {
		return 0, err
	}
	a := e.account(j, w, len(live) > 0, now)
	prev := j.Accounted
	if a.slots > 0 {
		j.Accounted = a.last
	}
	j.NextDue = nextDue(j, w, j.Accounted)
	if err := tx.PutSchedule(&j); err != nil {
		return 0, err
	}
	if a.told != "" {
		d, err := newDelivery(tx, j, "missed", a.told, now)
		if err != nil {
			return 0, err
		}
		for i := range a.idle {
			a.idle[i].row.Delivery = d
		}
	}
	// The slots that do not run are older than those that do: rows go
	// in in slot order, as the history's pages (by id) expect.
	for _, g := range a.idle {
		if _, err := tx.AddSlots(g.row, g.slots); err != nil {
			return 0, err
		}
	}
	if _, err := tx.AddRuns(a.runs); err != nil {
		return 0, err
	}
	for _, u := range a.runs {
		if u.ID != 0 {
			if err := runEvent(tx, j, *u); err != nil {
				return 0, err
			}
		}
	}
	// The history is trimmed once a day per job, or after a catch-up.
	if a.slots > 1 || prev.Truncate(24*time.Hour) != j.Accounted.Truncate(24*time.Hour) {
		if err := tx.PruneRuns(j.ID, now.Add(-keepFor), keepRuns); err != nil {
			return 0, err
		}
	}
	return a.slots, nil
}

// accounting is what account makes of a job's slots due at now.
type accounting struct {
	slots int       // how many
	last  time.Time // the newest
	// idle are the rows of the slots that do not run (missed,
	// skipped), oldest first, each a run of alike rows: a catch-up
	// after a day down may find thousands, which differ only in their
	// slot.
	idle []idle
	// runs are the rows of the slots that run (queued), which are
	// newer than every idle slot.
	runs []*store.ScheduleRun
	// told is the message about the idle slots ("" when there are
	// none).
	told string
}

// idle is slots that get alike rows: row, but each with its slot and a
// due time as far after it.
type idle struct {
	row   store.ScheduleRun
	slots []time.Time
}

// add puts u's slot in the last run of alike rows, or starts one. The
// idle rows of one job differ only in their slot (and due time), status
// and reason.
func (a *accounting) add(u store.ScheduleRun) {
	if n := len(a.idle); n > 0 {
		if g := &a.idle[n-1]; g.row.Status == u.Status && g.row.Reason == u.Reason {
			g.slots = append(g.slots, u.Slot)
			return
		}
	}
	a.idle = append(a.idle, idle{row: u, slots: []time.Time{u.Slot}})
}

// account makes the rows of j's slots due at now, and the text of the
// message about those that will not run.
func (e *Engine) account(j store.Schedule, w When, busy bool, now time.Time) accounting {
	jit := jitter(j)
	var slots []time.Time
	for s := j.Accounted; ; {
		s = w.Next(s)
		if s.IsZero() || s.Add(jit).After(now) {
			break
		}
		slots = append(slots, s)
	}
	if len(slots) == 0 {
		return accounting{}
	}
	newest := slots[len(slots)-1]
	a := accounting{slots: len(slots), last: newest}
	onTime := now.Sub(newest.Add(jit)) <= j.Grace
	var missed, skipped []time.Time
	for i, s := range slots {
		u := store.ScheduleRun{Schedule: j.ID, Slot: s, Attempt: 1, Due: s.Add(jit), Cause: CauseTime}
		last := i == len(slots)-1
		late := now.Sub(u.Due)
		switch {
		case j.Misfire == RunAll:
			u.Status = Queued
			if !last || !onTime {
				u.Cause, u.Reason = CauseCatchUp, fmt.Sprintf("%s; run-all runs it %s late", e.why(u.Due), round(late))
			}
		case !last:
			u.Status, u.Reason = Missed, e.why(u.Due)
			missed = append(missed, s)
		case busy:
			u.Status, u.Reason = Skipped, "the job's previous run was still running"
			skipped = append(skipped, s)
		case onTime:
			u.Status = Queued
		case j.Misfire == RunOnce:
			u.Status, u.Cause = Queued, CauseCatchUp
			u.Reason = fmt.Sprintf("%s; run-once runs it %s late", e.why(u.Due), round(late))
		default: // skip, past the grace window
			u.Status, u.Reason = Missed, e.why(u.Due)+"; the misfire policy is skip"
			missed = append(missed, s)
		}
		switch u.Status {
		case Queued:
			a.runs = append(a.runs, &u)
		case Missed:
			u.Ended = now
			a.add(u)
		default:
			a.add(u)
		}
	}
	if len(missed)+len(skipped) == 0 {
		return a
	}
	loc := time.UTC
	if z, err := LoadZone(j.TZ); err == nil {
		loc = z
	} else if z, err := LoadZone(localZoneOr("UTC")); err == nil {
		loc = z
	}
	var b strings.Builder
	if len(missed) > 0 {
		fmt.Fprintf(&b, "%s did not run at %s: %s.", title(j), listTimes(missed, loc), e.why(missed[len(missed)-1].Add(jit)))
		switch r := a.runs; {
		case len(r) > 0 && r[len(r)-1].Cause == CauseCatchUp:
			b.WriteString(" It runs once now, late.")
		case len(r) > 0:
			b.WriteString(" It runs now for " + newest.In(loc).Format("15:04") + ".")
		}
	}
	if len(skipped) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s skipped %s: its previous run was still running.", title(j), listTimes(skipped, loc))
	}
	a.told = b.String()
	return a
}

// why says why a slot due at due did not run at its time.
func (e *Engine) why(due time.Time) string {
	if due.Before(e.started) {
		return "den was not running"
	}
	return "den could not run it at its time (the machine may have been asleep)"
}

// listTimes names up to five slots, and how many more.
func listTimes(ts []time.Time, loc *time.Location) string {
	const show = 5
	layout := "15:04"
	if ts[len(ts)-1].Sub(ts[0]) >= 20*time.Hour {
		layout = "Jan 2 15:04"
	}
	var parts []string
	for i, t := range ts {
		if i == show-1 && len(ts) > show {
			parts = append(parts, fmt.Sprintf("%d more, the last at %s", len(ts)-i, ts[len(ts)-1].In(loc).Format(layout)))
			break
		}
		parts = append(parts, t.In(loc).Format(layout))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// round shortens a duration for people: to the second, or the minute
// past an hour.
func round(d time.Duration) time.Duration {
	if d >= time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// localZoneOr is this machine's zone, or def when den cannot tell.
func localZoneOr(def string) string {
	if z, err := LocalZone(); err == nil {
		return z
	}
	return def
}

// newDelivery stores a message about j, to be delivered now, with the
// event that shows it in the faces; it returns its id.
func newDelivery(tx *store.ScheduleTx, j store.Schedule, kind, body string, now time.Time) (int64, error) {
	return addDelivery(tx, j, kind, title(j), body, "", false, now)
}

func addDelivery(tx *store.ScheduleTx, j store.Schedule, kind, ttl, body, session string, speak bool, now time.Time) (int64, error) {
	d := &store.ScheduleDelivery{Schedule: j.ID, Kind: kind, Title: ttl, Body: body, Session: session, Speak: speak,
		Status: DeliveryPending, NextAttempt: now, Created: now}
	if err := tx.AddDelivery(d); err != nil {
		return 0, err
	}
	ev := &DeliveryEvent{Schedule: j.ID, Delivery: d.ID, Agent: j.Agent, Name: title(j), Kind: kind, Title: ttl, Body: body,
		Session: session, Status: DeliveryPending}
	return d.ID, tx.Event(ev.Type(), ev)
}

// missedDelivery tells the user about a job that will not run.
func missedDelivery(tx *store.ScheduleTx, j store.Schedule, body string, now time.Time) error {
	_, err := newDelivery(tx, j, "missed", body, now)
	return err
}
