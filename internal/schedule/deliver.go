package schedule

import (
	"context"
	"errors"
	"slices"
	"time"

	"den.dev/den/internal/store"
)

// deliverDue starts an attempt of each pending delivery that is due. An
// attempt leases the delivery (its next attempt moves deliveryLease
// ahead) before it starts, so that a den killed during it tries again
// after the lease, and a live one does not start it twice.
func (e *Engine) deliverDue(ctx context.Context) error {
	var due []store.ScheduleDelivery
	now := e.o.Clock.Now()
	err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		list, err := tx.DeliveriesDue(now)
		if err != nil {
			return err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, d := range list {
			if e.deliverin[d.ID] {
				continue
			}
			d.NextAttempt = now.Add(deliveryLease)
			if err := tx.PutDelivery(d); err != nil {
				return err
			}
			e.deliverin[d.ID] = true
			due = append(due, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range due {
		e.wg.Add(1)
		go e.deliver(d)
	}
	return nil
}

// deliver makes one attempt at d and records it: delivered; or, when
// it failed, another attempt later, until the job's retries are spent:
// then failed, which the faces are told.
func (e *Engine) deliver(d store.ScheduleDelivery) {
	defer e.wg.Done()
	defer e.Wake()
	defer func() {
		e.mu.Lock()
		delete(e.deliverin, d.ID)
		e.mu.Unlock()
	}()
	a := Attempt{Detail: "the faces"}
	if e.o.Deliverer != nil {
		ctx, cancel := context.WithTimeout(e.runCtx, deliveryLease-30*time.Second)
		a = e.o.Deliverer.Deliver(ctx, d)
		cancel()
	}
	err := a.Err
	now := e.o.Clock.Now()
	rerr := e.o.Store.UpdateSchedules(context.WithoutCancel(e.runCtx), func(tx *store.ScheduleTx) error {
		cur, err2 := tx.Delivery(d.ID)
		if errors.Is(err2, store.ErrNotFound) {
			return nil // its job was removed
		}
		if err2 != nil {
			return err2
		}
		cur.Attempts++
		cur.Detail = a.Detail
		for _, r := range a.Reached {
			if !slices.Contains(cur.Reached, r) {
				cur.Reached = append(cur.Reached, r)
			}
		}
		switch {
		case err == nil:
			cur.Status, cur.Delivered, cur.NextAttempt, cur.Error = DeliveryDelivered, now, time.Time{}, ""
		case e.runCtx.Err() != nil:
			// den is stopping: the attempt did not happen; try again at
			// the next start.
			cur.Attempts--
			cur.NextAttempt = now
		case cur.Attempts <= len(e.o.DeliveryRetry):
			cur.Error, cur.NextAttempt = err.Error(), now.Add(e.o.DeliveryRetry[cur.Attempts-1])
		default:
			cur.Status, cur.Error, cur.NextAttempt = DeliveryFailed, err.Error(), time.Time{}
		}
		if err := tx.PutDelivery(cur); err != nil {
			return err
		}
		if cur.Status != DeliveryPending {
			j, err := tx.Schedule(cur.Schedule)
			if err != nil {
				return err
			}
			ev := &DeliveryEvent{Schedule: j.ID, Delivery: cur.ID, Agent: j.Agent, Name: title(j), Kind: cur.Kind, Title: cur.Title,
				Body: cur.Body, Session: cur.Session, Status: cur.Status, Error: cur.Error}
			return tx.Event(ev.Type(), ev)
		}
		return nil
	})
	if rerr != nil {
		e.o.Log.Error("scheduler: delivery not recorded", "delivery", d.ID, "err", rerr)
	}
	if err != nil {
		e.o.Log.Warn("scheduler: delivery failed", "delivery", d.ID, "err", err)
	}
}
