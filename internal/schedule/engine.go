package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"den.dev/den/internal/store"
)

// Store is what the scheduler keeps in den's store; *store.Store
// implements it.
type Store interface {
	Schedules(ctx context.Context, agent string) ([]store.Schedule, error)
	GetSchedule(ctx context.Context, id int64) (store.Schedule, error)
	ScheduleRuns(ctx context.Context, q store.RunQuery) ([]store.ScheduleRun, error)
	GetScheduleRun(ctx context.Context, id int64) (store.ScheduleRun, error)
	LastScheduleRuns(ctx context.Context) (map[int64]store.ScheduleRun, error)
	ScheduleDeliveries(ctx context.Context, ids []int64) (map[int64]store.ScheduleDelivery, error)
	ScheduleWake(ctx context.Context) (time.Time, error)
	UpdateSchedules(ctx context.Context, fn func(tx *store.ScheduleTx) error) error
}

var _ Store = (*store.Store)(nil)

// Runner runs a job's prompt: den serve implements it with the session
// runtime.
type Runner interface {
	// Session is the session a run of j uses: a new one, or the session
	// j continues (made at its first run, and again if it was deleted).
	Session(ctx context.Context, j store.Schedule) (string, error)
	// Turn sends prompt in the session with j's model, budget and turn
	// limit, and waits for the turn to end. When ctx ends with
	// ErrStopped as its cause (context.Cause: a person stopped the
	// run), Turn cancels the session's turn as a person's cancel of the
	// session does, and waits for it to end.
	Turn(ctx context.Context, session string, j store.Schedule, prompt string) Turn
	// Verify runs command in the session's computer and waits for it.
	Verify(ctx context.Context, session, command string) Verified
}

// Turn is how a run's turn ended.
type Turn struct {
	// Ended is true when the agent ended its turn itself: not stopped
	// by a limit, an error, a refusal or a person.
	Ended bool
	// Answer is the text of its last turn.
	Answer string
	// Reason says why it did not end, for the history.
	Reason string
	// Interrupted is true when den stopped during the turn: the run is
	// recorded interrupted and retried.
	Interrupted bool
	// Retryable is true when the failure may pass (a model's error);
	// not for a limit reached, a refusal or a person's stop.
	Retryable bool
	// CostUSD is what the turn cost.
	CostUSD float64
	// Note, for an ended turn, is what the history should say of it
	// beside ok (host commands denied for want of a person to ask).
	Note string
}

// Verified is how a verification ended: its exit code and the tail of
// what it printed, or why it did not run.
type Verified struct {
	Exit        int
	Output      string
	Err         error
	Interrupted bool // den stopped while it ran
}

// Deliverer delivers messages about runs to the user beyond the event
// the scheduler stores for the faces: Web Push, speech.
type Deliverer interface {
	// Deliver attempts d on the channels it has not reached yet (those
	// not in d.Reached).
	Deliver(ctx context.Context, d store.ScheduleDelivery) Attempt
}

// Attempt is how one attempt at a delivery went: the channels it
// reached (later attempts skip them), what the delivery has reached in
// all, in words, and why the rest failed (nil: nothing is left).
type Attempt struct {
	Reached []string
	Detail  string
	Err     error
}

// Defaults of Options.
const (
	DefaultMaxRunning = 4
	// quietFor is how long after a run ends its session stays Quiet.
	quietFor = 2 * time.Minute
	// keepRuns and keepFor bound a job's history: rows older than
	// keepFor go, but never the newest keepRuns.
	keepRuns = 200
	keepFor  = 90 * 24 * time.Hour
	// deliveryLease is how long a delivery attempt may take before
	// another is made (den was killed during it).
	deliveryLease = 5 * time.Minute
)

// DefaultDeliveryRetry are the waits before a failed delivery is tried
// again; after the last, it is failed and reported.
var DefaultDeliveryRetry = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// retryDelays are the waits before a failed run is tried again (an
// interrupted run is retried at once: den was down meanwhile).
var retryDelays = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// Options wire an Engine.
type Options struct {
	Store     Store
	Runner    Runner
	Deliverer Deliverer // nil: the stored event is the delivery
	Clock     Clock     // nil: WallClock
	// Lock is the leader's lock file ("" for none: a test's engine).
	Lock string
	// MaxRunning bounds the runs at once (0: DefaultMaxRunning); the
	// others wait, queued, and say how late they started.
	MaxRunning int
	// DeliveryRetry replaces DefaultDeliveryRetry when set.
	DeliveryRetry []time.Duration
	// Grace is how long runs get to record how they ended once the
	// engine stops (0: 30 s); den serve stops its runtime meanwhile.
	Grace time.Duration
	// Owner names this process in the rows it claims.
	Owner string
	Log   *slog.Logger
}

// Engine is the scheduler: the single leader per data dir that
// accounts for every slot of every job, runs what is due, retries what
// was interrupted and delivers what runs ended with. It sleeps until
// the next thing is due; Wake makes it look again (a job changed).
type Engine struct {
	o       Options
	wake    chan struct{}
	started time.Time // when it took the lead: slots due before were missed because den was not running

	runCtx    context.Context // runs and deliveries: ended Grace after Run's ctx
	endRuns   context.CancelFunc
	wg        sync.WaitGroup
	mu        sync.Mutex
	running   map[int64]liveRun    // runs in this process, by run id
	deliverin map[int64]bool       // delivery ids being delivered
	sessions  map[string]time.Time // sessions of runs: zero while running, else when the run ended
}

// liveRun is a run in this process: its job, and the cancel of its
// context, which a Book.Stop of the run leads to (cancelStopped).
type liveRun struct {
	job  int64
	stop context.CancelCauseFunc
}

// New makes an Engine; Run runs it.
func New(o Options) *Engine {
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.MaxRunning <= 0 {
		o.MaxRunning = DefaultMaxRunning
	}
	if o.DeliveryRetry == nil {
		o.DeliveryRetry = DefaultDeliveryRetry
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	if o.Owner == "" {
		o.Owner = fmt.Sprintf("pid %d", os.Getpid())
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Engine{o: o, wake: make(chan struct{}, 1), runCtx: ctx, endRuns: cancel,
		running: map[int64]liveRun{}, deliverin: map[int64]bool{}, sessions: map[string]time.Time{}}
}

// Wake makes the engine look at the schedules again. It never blocks.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Quiet reports whether session belongs to a scheduled run that runs,
// or ended within the last two minutes: the scheduler tells the user
// how such a run went, so the session's own "done" need not be pushed.
func (e *Engine) Quiet(session string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for s, ended := range e.sessions {
		if !ended.IsZero() && now.Sub(ended) > quietFor {
			delete(e.sessions, s)
		}
	}
	_, ok := e.sessions[session]
	return ok
}

// Run leads (waiting for the leader's lock), recovers what a killed
// den left, then runs the schedules until ctx ends; then it waits for
// the runs in flight to record how they ended (up to Options.Grace).
func (e *Engine) Run(ctx context.Context) error {
	if e.o.Lock != "" {
		lock, err := lead(ctx, e.o.Lock)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		defer lock.Close()
	}
	e.started = e.o.Clock.Now()
	e.o.Log.Info("scheduler: leading", "owner", e.o.Owner)
	if err := e.recover(ctx); err != nil {
		e.o.Log.Error("scheduler: runs a stopped den left not recovered", "err", err)
	}
	// A tick leaves nothing due (what it could not do, it puts off); if
	// the store fails so that something still is, the engine backs off
	// rather than spin.
	backoff := time.Duration(0)
	for {
		next := e.tick(ctx)
		if now := e.o.Clock.Now(); !next.IsZero() && !next.After(now) {
			backoff = min(max(2*backoff, 10*time.Millisecond), time.Minute)
			next = now.Add(backoff)
		} else {
			backoff = 0
		}
		if !e.sleep(ctx, next) {
			break
		}
	}
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(e.o.Grace, e.endRuns)
	})
	defer stop()
	e.wg.Wait()
	e.endRuns()
	return nil
}

// sleep waits until next (zero: until woken), a wake, or ctx's end,
// and reports whether to go on.
func (e *Engine) sleep(ctx context.Context, next time.Time) bool {
	var fire <-chan struct{}
	if !next.IsZero() {
		ch, stop := e.o.Clock.Until(next)
		defer stop()
		fire = ch
	}
	select {
	case <-ctx.Done():
		return false
	case <-e.wake:
	case <-fire:
	}
	return ctx.Err() == nil
}

// tick does what is due now: retries, the slots of due jobs, the queued
// runs there is room for, the deliveries; and returns when the next
// thing is due.
func (e *Engine) tick(ctx context.Context) time.Time {
	now := e.o.Clock.Now()
	if err := e.cancelStopped(ctx); err != nil {
		e.o.Log.Error("scheduler: stopped runs not canceled", "err", err)
	}
	if err := e.retry(ctx, now); err != nil {
		e.o.Log.Error("scheduler: retries", "err", err)
	}
	var due []int64
	err := e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) (err error) {
		due, err = tx.Due(now)
		return err
	})
	if err != nil {
		e.o.Log.Error("scheduler: due jobs", "err", err)
	}
	e.plan(ctx, due, now)
	if err := e.start(ctx); err != nil {
		e.o.Log.Error("scheduler: runs not started", "err", err)
	}
	if err := e.deliverDue(ctx); err != nil {
		e.o.Log.Error("scheduler: deliveries", "err", err)
	}
	next, err := e.o.Store.ScheduleWake(ctx)
	if err != nil {
		e.o.Log.Error("scheduler: next wake", "err", err)
		return now.Add(time.Minute)
	}
	return next
}

// recover records the runs a stopped den left running as interrupted,
// retries them per their job's policy, and takes back the deliveries it
// was attempting. Only the leader runs runs and delivers, and it has
// just taken the lead: every such run and attempt is over.
func (e *Engine) recover(ctx context.Context) error {
	now := e.o.Clock.Now()
	return e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		if err := tx.ReleaseDeliveries(now); err != nil {
			return err
		}
		runs, err := tx.Runs(0, Running)
		if err != nil {
			return err
		}
		for _, u := range runs {
			j, err := tx.Schedule(u.Schedule)
			if err != nil {
				return err
			}
			u.Status, u.Ended = Interrupted, now
			because(&u, "den stopped during the run")
			if err := e.finish(tx, j, &u, true, 0, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// retry queues the next attempt of each run whose retry is due.
func (e *Engine) retry(ctx context.Context, now time.Time) error {
	return e.o.Store.UpdateSchedules(ctx, func(tx *store.ScheduleTx) error {
		due, err := tx.RetriesDue(now)
		if err != nil {
			return err
		}
		for _, u := range due {
			j, err := tx.Schedule(u.Schedule)
			if err != nil {
				return err
			}
			u.RetryAt = time.Time{}
			if err := tx.PutRun(u); err != nil {
				return err
			}
			next := &store.ScheduleRun{Schedule: u.Schedule, Slot: u.Slot, Attempt: u.Attempt + 1, Due: now, Cause: CauseRetry,
				Status: Queued, Reason: fmt.Sprintf("attempt %d: the last was %s (%s)", u.Attempt+1, u.Status, u.Reason)}
			if _, err := tx.AddRun(next); err != nil {
				return err
			}
			if err := runEvent(tx, j, *next); err != nil {
				return err
			}
		}
		return nil
	})
}

func runEvent(tx *store.ScheduleTx, j store.Schedule, u store.ScheduleRun) error {
	ev := &RunEvent{Schedule: j.ID, Run: u.ID, Agent: j.Agent, Name: title(j), Slot: u.Slot, Attempt: u.Attempt, Cause: u.Cause,
		Status: u.Status, Reason: u.Reason, Session: u.Session}
	return tx.Event(ev.Type(), ev)
}
