package schedule

import (
	"strings"
	"time"

	"den.dev/den/internal/store"
)

// Job states, as views show them.
const (
	StateActive  = "active"  // waiting for its next slot
	StateRunning = "running" // a run is in progress (or waits to start)
	StatePaused  = "paused"
	StateDone    = "done" // no slot is left (a one-shot time that ran)
)

// JobView is a job as the faces show it (den schedule --json, the API,
// den-schedule): its settings, its state, its next run and its newest
// run.
type JobView struct {
	ID        int64      `json:"id"`
	Agent     string     `json:"agent"`
	Name      string     `json:"name,omitempty"`
	Title     string     `json:"title"`
	When      string     `json:"when"`
	Kind      string     `json:"kind"`
	Spec      string     `json:"spec"`
	TZ        string     `json:"tz,omitempty"`
	Prompt    string     `json:"prompt"`
	Session   string     `json:"session,omitempty"`
	SessionID string     `json:"session_id,omitempty"`
	Model     string     `json:"model,omitempty"`
	Budget    string     `json:"budget,omitempty"`
	MaxTurns  int        `json:"max_turns,omitempty"`
	Verify    string     `json:"verify,omitempty"`
	Deliver   string     `json:"deliver"`
	Speak     bool       `json:"speak"`
	Approvals string     `json:"approvals"`
	Misfire   string     `json:"misfire"`
	Grace     string     `json:"grace"`
	Jitter    string     `json:"jitter"`
	Retries   int        `json:"retries"`
	State     string     `json:"state"`
	NextRun   *time.Time `json:"next_run,omitempty"`
	Last      *RunView   `json:"last,omitempty"`
	CreatedBy string     `json:"created_by"`
	Created   time.Time  `json:"created"`
	Updated   time.Time  `json:"updated"`
}

// RunView is a run (or a slot that did not run) as the faces show it:
// when it was scheduled, started and ended, its status and why, how late
// it started, its session and cost, its answer, and where its delivery
// is.
type RunView struct {
	ID       int64      `json:"id"`
	Schedule int64      `json:"schedule_id"`
	Title    string     `json:"title,omitempty"`
	Slot     time.Time  `json:"scheduled"`
	Due      time.Time  `json:"due"`
	Attempt  int        `json:"attempt"`
	Cause    string     `json:"cause"`
	Status   string     `json:"status"`
	Reason   string     `json:"reason,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	Late     string     `json:"late,omitempty"` // how late it started, from 1s
	Session  string     `json:"session_id,omitempty"`
	CostUSD  float64    `json:"cost_usd"`
	Answer   string     `json:"answer,omitempty"`
	RetryAt  *time.Time `json:"retry_at,omitempty"`
	// Delivery is pending, delivered, failed or none;
	// DeliveryDetail says where it went, DeliveryError why it failed.
	Delivery       string `json:"delivery"`
	DeliveryDetail string `json:"delivery_detail,omitempty"`
	DeliveryError  string `json:"delivery_error,omitempty"`
}

func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func view(j store.Schedule, last *store.ScheduleRun, ds map[int64]store.ScheduleDelivery) JobView {
	w := When{Kind: j.Kind, Spec: j.Spec, TZ: j.TZ, Anchor: j.Anchor}
	v := JobView{ID: j.ID, Agent: j.Agent, Name: j.Name, Title: title(j), When: w.String(), Kind: j.Kind, Spec: j.Spec, TZ: j.TZ,
		Prompt: j.Prompt, Session: j.Session, SessionID: j.SessionID, Model: j.Model, Budget: j.Budget, MaxTurns: j.MaxTurns,
		Verify: j.Verify, Deliver: j.Deliver, Speak: j.Speak, Approvals: j.Approvals, Misfire: j.Misfire, Grace: FormatDuration(j.Grace),
		Jitter: FormatDuration(j.Jitter), Retries: j.Retries, NextRun: optional(j.NextDue), CreatedBy: j.CreatedBy, Created: j.Created,
		Updated: j.Updated}
	if j.Paused {
		v.NextRun = nil
	}
	if last != nil {
		r := runView(*last, ds, j)
		v.Last = &r
	}
	switch {
	case j.Paused:
		v.State = StatePaused
	case last != nil && (last.Status == Running || last.Status == Queued || !last.RetryAt.IsZero()):
		v.State = StateRunning
	case j.NextDue.IsZero():
		v.State = StateDone
	default:
		v.State = StateActive
	}
	return v
}

func runView(u store.ScheduleRun, ds map[int64]store.ScheduleDelivery, j store.Schedule) RunView {
	r := RunView{ID: u.ID, Schedule: u.Schedule, Slot: u.Slot, Due: u.Due, Attempt: u.Attempt, Cause: u.Cause, Status: u.Status,
		Reason: u.Reason, Started: optional(u.Started), Ended: optional(u.Ended), Session: u.Session, CostUSD: u.CostUSD,
		Answer: u.Answer, RetryAt: optional(u.RetryAt), Delivery: DeliveryNone}
	if j.ID != 0 {
		r.Title = title(j)
	}
	if !u.Started.IsZero() {
		if late := u.Started.Sub(u.Due); late >= time.Second {
			r.Late = round(late).String()
		}
	}
	if d, ok := ds[u.Delivery]; ok && u.Delivery != 0 {
		r.Delivery, r.DeliveryDetail, r.DeliveryError = d.Status, d.Detail, d.Error
	}
	return r
}

// FormatDuration writes d as ParseDuration reads it, without zero
// units: 5m, 1h30m, 30s, 0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
