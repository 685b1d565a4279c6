package schedule

import "time"

// The scheduler's events, stored with no session in the transaction
// that makes the change they tell of (so that a process that reads
// events never misses a change, nor sees one that was rolled back).
// They are JSON objects of package event's envelope: the faces read
// them from /api/v1/events, and den serve's scheduler wakes on
// "schedule".

// Changed says a job was added, changed, removed, paused, resumed,
// asked to run now, or its run was stopped: event "schedule".
type Changed struct {
	Schedule int64  `json:"schedule_id"`
	Agent    string `json:"agent"`
	Name     string `json:"name"`
	Change   string `json:"change"` // added, changed, removed, paused, resumed, run, stopped
}

// Type is the event's type.
func (*Changed) Type() string { return "schedule" }

// RunEvent says where a run is: event "schedule_run", at each change
// of a run that runs (queued, running, and how it ended). Slots that
// did not run are told of by the delivery about them.
type RunEvent struct {
	Schedule int64     `json:"schedule_id"`
	Run      int64     `json:"run_id"`
	Agent    string    `json:"agent"`
	Name     string    `json:"name"`
	Slot     time.Time `json:"slot"`
	Attempt  int       `json:"attempt"`
	Cause    string    `json:"cause"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	Session  string    `json:"session,omitempty"`
}

// Type is the event's type.
func (*RunEvent) Type() string { return "schedule_run" }

// DeliveryEvent is a message for the user about a job, event
// "schedule_delivery": made (status pending: the faces show it, as
// they show den-notify's), then failed for good if it could not be
// delivered (the faces say so). Kind is result (a run's answer),
// failure (a run that failed) or missed (slots that did not run).
type DeliveryEvent struct {
	Schedule int64  `json:"schedule_id"`
	Delivery int64  `json:"delivery_id"`
	Agent    string `json:"agent"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	Session  string `json:"session,omitempty"`
	Status   string `json:"status"`
	Error    string `json:"error,omitempty"`
}

// Type is the event's type.
func (*DeliveryEvent) Type() string { return "schedule_delivery" }
