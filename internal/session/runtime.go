package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/models"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/store"
)

// Options wire a Runtime.
type Options struct {
	Store   *store.Store
	DataDir string
	Config  *config.Config
	// Computer opens an agent's computer, provisioning it when needed,
	// and gives the options its sessions start with (network, mounts).
	Computer func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error)
	// Holder names this process in session locks ("den run", "den serve").
	Holder string
	// IdleStop stops a session's computer once it has been idle this
	// long; 0 keeps it until Close.
	IdleStop time.Duration
	// Watch makes the runtime run what other processes left: messages
	// queued for sessions nobody runs, and sessions a killed den left
	// running (repaired, then marked interrupted). The daemon watches;
	// den run does not.
	Watch bool
	// Devices lets host commands reach the browsers that connect to
	// Devices() (den serve's web face).
	Devices bool
	// Ask asks a person a den-ask question in the face that started the
	// runtime (nil: den-ask is not available).
	Ask func(ctx context.Context, question string, choices []string) (string, error)
	// Prompt asks a person for an approval in the face that started the
	// runtime, beside every other face (Answer); nil: only those.
	Prompt func(ctx context.Context, r *permission.ApprovalRequest) (permission.Answer, error)
	// MCP is the MCP servers' file; "" for mcp.json beside the config
	// file (see mcpclient). It is read when a session's computer
	// starts.
	MCP string
	// Version is den's, told to MCP servers.
	Version string
	Log     *slog.Logger
}

// TurnOptions shape the runs a message starts.
type TurnOptions struct {
	Model         string // a model ref; "" for the session's own
	Thinking      llm.ThinkingLevel
	MaxTurns      int    // 0: agent.DefaultMaxTurns
	Budget        string // this run's: dollars ("0.50") or tokens ("200k tokens")
	SessionBudget string // the whole session's
	Stall         time.Duration
	// Approvals is what an approval does: wait for a face (the zero
	// value), approve at once (den run --yes), or deny (nobody to ask).
	Approvals permission.Mode
	// IfBusy is what Send does when another den process runs the
	// session's turn.
	IfBusy Busy
}

// Busy says what Send does when another process holds the session.
type Busy int

// What Send may do with a session another process runs.
const (
	// Queue the message: the holder delivers it at its next turn
	// boundary, or a watching runtime runs it once the holder is done.
	Queue Busy = iota
	// Fail with store.ErrSessionBusy (den run without --wait).
	Fail
	// Wait for the holder to finish, then run (den run --wait).
	Wait
)

// Runtime owns the sessions of one den process: every face sends
// messages, cancels turns, follows events and answers approvals through
// it. A session runs one turn at a time, in this process or in
// another (the session lock says which); messages sent meanwhile are
// queued and join the conversation at the next turn boundary.
type Runtime struct {
	o   Options
	st  *store.Store
	hub *hub
	log *slog.Logger

	ctx     context.Context // ends at Close: runs are canceled
	cancel  context.CancelFunc
	wg      sync.WaitGroup // workers and the watcher
	workers sync.WaitGroup // workers
	idleWG  sync.WaitGroup // idle timers scheduled and not stopped
	halting atomic.Bool    // Shutdown began: runs stop at their next turn boundary

	cfg atomic.Pointer[config.Config]

	provision   sync.Map // agent name → *sync.Mutex: one opening of its computer at a time
	catalogs    sync.Map // agent name → *skill.Catalog: kept, as it remembers what it verified
	skillsUsed  skillsInUse
	mcpPolicies mcpPolicies // MCP servers' egress policies, as mcp.json changes

	drafts sync.Mutex // the agents' skill-drafts folders: one writer or reader at a time

	devices *Devices // the browsers host commands reach (Options.Devices)
	web     browsers // the agents' own web browsers
	subs    subagents

	mu      sync.Mutex
	live    map[string]*live
	answers map[string]chan permission.Answer // approvals waiting in this process
	closed  bool
}

// live is a session loaded in this process.
type live struct {
	id      string
	running bool // a worker runs its queue
	kicked  bool // a message came while the worker ran
	cont    bool // the worker's first run continues from the head (a regenerate)
	opts    TurnOptions
	cancel  context.CancelFunc
	eng     *engine
	idle    *time.Timer
	done    []chan Outcome // senders waiting for the worker to end
	wake    chan struct{}  // a worker waiting for its sub-agents looks again
	waiting int            // approvals pending
	modeMu  sync.Mutex
	approve permission.Mode
}

func (l *live) mode() permission.Mode {
	l.modeMu.Lock()
	defer l.modeMu.Unlock()
	return l.approve
}

// Outcome is how the runs a message started ended: the last run's
// result and error.
type Outcome struct {
	Result agent.Result
	Err    error
}

// New starts a runtime.
func New(o Options) (*Runtime, error) {
	if o.Store == nil || o.Config == nil || o.Computer == nil {
		return nil, errors.New("session: New needs a store, a config and a way to open computers")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Holder == "" {
		o.Holder = "den"
	}
	h, err := newHub(o.Store, o.Log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{o: o, st: o.Store, hub: h, log: o.Log, ctx: ctx, cancel: cancel, devices: newDevices(),
		live: map[string]*live{}, answers: map[string]chan permission.Answer{}}
	r.cfg.Store(o.Config)
	if o.Watch {
		r.wg.Go(r.watch)
	}
	return r, nil
}

// Config is the configuration runs start with.
func (r *Runtime) Config() *config.Config { return r.cfg.Load() }

// SetConfig replaces the configuration for runs that start from now on
// (a turn in progress keeps its own; a started computer keeps its host
// commands' policy until it is stopped).
func (r *Runtime) SetConfig(c *config.Config) { r.cfg.Store(c) }

// Store is the runtime's store.
func (r *Runtime) Store() *store.Store { return r.st }

// Message is what a face sends.
type Message struct {
	Text string
	// Parts, when set, are the message (text and attachments); Text is
	// then how it reads in a list.
	Parts []llm.Part
	// From is the session that sends it ("" for a person): a parent
	// steering its sub-agent, a sub-agent's answer.
	From string
}

// Sent is a message accepted: the id it has (or will have, once
// delivered) in the history, whether it waits behind a running turn,
// and a channel that gets the outcome once the session's worker ends
// (only for the sender whose message started it, or waited for it).
type Sent struct {
	MessageID string
	Queued    bool
	Done      <-chan Outcome
}

// Send gives a session a message. It runs now, or, while a turn runs
// (here or in another den process), is queued and joins the
// conversation at the next turn boundary.
func (r *Runtime) Send(ctx context.Context, sessionID string, m Message, opts TurnOptions) (Sent, error) {
	return r.send(ctx, sessionID, m, opts, r.enqueue)
}

// send is Send with put queuing the message: a sub-agent's answer is
// queued in the transaction that records its delivery.
func (r *Runtime) send(ctx context.Context, sessionID string, m Message, opts TurnOptions,
	put func(context.Context, store.Session, Message) (store.Queued, error)) (Sent, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return Sent{}, err
	}
	if m.Text == "" && len(m.Parts) == 0 {
		return Sent{}, fmt.Errorf("%w: empty message", ErrBadOptions)
	}
	if r.halting.Load() {
		return Sent{}, ErrClosed
	}
	if _, _, err := parseBudget(opts.Budget); err != nil {
		return Sent{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if _, _, err := parseBudget(opts.SessionBudget); err != nil {
		return Sent{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	l, err := r.load(sessionID)
	if err != nil {
		return Sent{}, err
	}
	m = r.withSkill(ctx, sess.Agent, sessionID, m)
	m = r.withMCPPrompt(ctx, sess, m)
	done := make(chan Outcome, 1)
	var lock *store.SessionLock
	if !r.Running(sessionID) {
		lock, err = r.st.LockSession(ctx, sessionID, r.o.Holder, opts.IfBusy == Wait)
		switch {
		case errors.Is(err, store.ErrSessionBusy) && r.Running(sessionID):
			// This process took it meanwhile: queue behind that worker.
			err = nil
		case errors.Is(err, store.ErrSessionBusy) && opts.IfBusy == Fail:
			return Sent{}, err
		case errors.Is(err, store.ErrSessionBusy):
			// Another den runs the session: it takes the message at its
			// next turn boundary (or a watching runtime, once it is done).
			q, err := put(ctx, sess, m)
			if err != nil {
				return Sent{}, err
			}
			r.emit(sessionID, &event.QueuedMessage{MessageID: q.MessageID, Text: m.Text})
			r.emit(sessionID, &event.Status{Status: event.Queued, Detail: "another den process runs this session's turn"})
			return Sent{MessageID: q.MessageID, Queued: true}, nil
		case err != nil:
			return Sent{}, err
		}
	}
	q, err := put(ctx, sess, m)
	if err != nil {
		lock.Unlock()
		return Sent{}, err
	}
	for {
		r.mu.Lock()
		if r.closed || r.halting.Load() {
			// Stored: it runs when den starts again.
			r.mu.Unlock()
			lock.Unlock()
			return Sent{MessageID: q.MessageID, Queued: true}, nil
		}
		if l.running {
			// The running worker delivers it at its next turn boundary.
			lock.Unlock()
			l.kicked = true
			l.opts = opts
			l.done = append(l.done, done)
			r.mu.Unlock()
			r.wake(sessionID)
			r.emit(sessionID, &event.QueuedMessage{MessageID: q.MessageID, Text: m.Text})
			return Sent{MessageID: q.MessageID, Queued: true, Done: done}, nil
		}
		if lock != nil {
			l.running, l.opts = true, opts
			l.done = append(l.done, done)
			r.startWorker(l, lock)
			r.mu.Unlock()
			return Sent{MessageID: q.MessageID, Done: done}, nil
		}
		r.mu.Unlock()
		// The worker the message was to join ended meanwhile (it lets
		// go of the session as it ends): take the session as a new run
		// does. Another den that took it first runs the message.
		lock, err = r.st.LockSession(ctx, sessionID, r.o.Holder, false)
		if err != nil {
			return Sent{MessageID: q.MessageID, Queued: true}, nil
		}
	}
}

// enqueue queues m for the session, naming an untitled session after
// its first message.
func (r *Runtime) enqueue(ctx context.Context, sess store.Session, m Message) (store.Queued, error) {
	if sess.Title == "" && m.Text != "" {
		if err := r.st.SetTitle(ctx, sess.ID, title(m.Text)); err != nil {
			return store.Queued{}, err
		}
	}
	return r.st.EnqueueMessage(ctx, store.Queued{Session: sess.ID, Text: m.Text, Parts: m.Parts, FromSession: m.From})
}

// load returns the session's live state, making it.
func (r *Runtime) load(id string) (*live, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	l := r.live[id]
	if l == nil {
		l = &live{id: id, wake: make(chan struct{}, 1)}
		r.live[id] = l
	}
	r.stopIdle(l)
	return l, nil
}

// startWorker runs the session's queue in a goroutine of its own,
// holding lock. r.mu is held.
func (r *Runtime) startWorker(l *live, lock *store.SessionLock) {
	ctx, cancel := context.WithCancel(r.ctx)
	l.cancel = cancel
	r.workers.Add(1)
	r.wg.Go(func() {
		defer r.workers.Done()
		defer cancel()
		r.work(ctx, l, lock)
	})
}

// work runs the session until nothing is queued: each run takes every
// queued message, and messages queued while it runs join at its turn
// boundaries. It lets go of the session's lock as it stops running,
// under r.mu, so that a Send sees either a running worker to join or a
// session it can lock.
func (r *Runtime) work(ctx context.Context, l *live, lock *store.SessionLock) {
	var out Outcome
	for {
		r.mu.Lock()
		opts := l.opts
		l.kicked = false
		r.mu.Unlock()
		l.modeMu.Lock()
		l.approve = opts.Approvals
		l.modeMu.Unlock()
		res, err, ran := r.runOnce(ctx, l, opts)
		if ran {
			out = Outcome{Result: res, Err: err}
		}
		if ran && err == nil {
			r.awaitSubagents(ctx, l)
		}
		r.mu.Lock()
		again := l.kicked && ctx.Err() == nil && !errors.Is(err, ErrBadOptions) && !r.halting.Load()
		if !again {
			l.running, l.cancel = false, nil
			lock.Unlock()
			waiters := l.done
			l.done = nil
			r.idleLater(l)
			r.mu.Unlock()
			for _, w := range waiters {
				w <- out
			}
			r.subagentEnded(l.id, out)
			if out.Err != nil {
				r.parentEnded(l.id)
			}
			return
		}
		r.mu.Unlock()
	}
}

// runOnce runs the loop once over what is queued, telling the faces how
// it went. ran is false when there was nothing to do.
func (r *Runtime) runOnce(ctx context.Context, l *live, opts TurnOptions) (res agent.Result, err error, ran bool) {
	sess, err := r.st.GetSession(ctx, l.id)
	if err != nil {
		return res, err, true
	}
	r.mu.Lock()
	cont := l.cont
	l.cont = false
	r.mu.Unlock()
	// What its sub-agents still owe it (a den that stopped left it
	// undelivered) joins this run.
	r.deliverOwed(ctx, l.id)
	if q, err := r.st.QueuedMessages(ctx, l.id); err != nil {
		return res, err, true
	} else if len(q) == 0 && !cont {
		return res, nil, false
	}
	before := r.beginSubagentRun(ctx, sess)
	defer func() { r.endSubagentRun(sess, before, err, ran) }()
	if err := r.ensureEngine(ctx, l, sess); err != nil {
		r.finish(l.id, res, err)
		return res, err, true
	}
	cfg, err := r.turnConfig(ctx, l.eng, sess, opts)
	if err != nil {
		r.finish(l.id, res, err)
		return res, err, true
	}
	r.emit(l.id, &event.Status{Status: event.Running})
	if cont {
		res, err = agent.Continue(ctx, cfg, l.id)
	} else {
		res, err = agent.Run(ctx, cfg, l.id, llm.Message{Role: llm.User})
	}
	if errors.Is(err, agent.ErrNothingToDo) {
		// Taken meanwhile (the session is locked, so only a message
		// delivered with the queue's previous run can cause this).
		r.emit(l.id, &event.Status{Status: event.Idle})
		return res, nil, false
	}
	r.finish(l.id, res, err)
	return res, err, true
}

// ensureEngine starts the session's computer when it is not running.
// Only the session's worker (or Compact, which holds the session like
// one) starts it; l.eng changes under r.mu, as the faces read it.
func (r *Runtime) ensureEngine(ctx context.Context, l *live, sess store.Session) error {
	r.mu.Lock()
	running := l.eng != nil
	r.mu.Unlock()
	if running {
		return nil
	}
	e, err := r.start(ctx, l, sess)
	if err != nil {
		return err
	}
	r.mu.Lock()
	l.eng = e
	r.mu.Unlock()
	return nil
}

// finish tells the faces how a run ended: done, and the session's new
// status.
func (r *Runtime) finish(id string, res agent.Result, err error) {
	switch {
	case errors.Is(err, agent.ErrCanceled) && r.halting.Load():
		r.emit(id, &agent.DoneEvent{Stop: "canceled", Text: res.Text})
		r.emit(id, &event.Status{Status: event.Interrupted, Detail: "den stopped during the turn"})
	case errors.Is(err, agent.ErrCanceled):
		r.emit(id, &agent.DoneEvent{Stop: "canceled", Text: res.Text})
		r.emit(id, &event.Status{Status: event.Interrupted, Detail: "stopped"})
	case errors.Is(err, agent.ErrHalted):
		r.emit(id, &agent.DoneEvent{Stop: "halted", Text: res.Text})
		r.emit(id, &event.Status{Status: event.Interrupted, Detail: "den stopped at a turn boundary; send a message to go on"})
	case errors.Is(err, agent.ErrBudget):
		r.emit(id, &agent.ErrorEvent{Message: err.Error()})
		r.emit(id, &agent.DoneEvent{Stop: "budget", Text: res.Text})
		r.emit(id, &event.Status{Status: event.Error, Detail: err.Error()})
	case err != nil:
		r.emit(id, &agent.ErrorEvent{Message: err.Error()})
		r.emit(id, &agent.DoneEvent{Stop: res.Stop, Text: res.Text})
		r.emit(id, &event.Status{Status: event.Error, Detail: err.Error()})
	default:
		r.emit(id, &agent.DoneEvent{Stop: res.Stop, Text: res.Text})
		if n := r.pendingReports(id); n > 0 {
			r.emit(id, &event.Status{Status: event.Running, Detail: fmt.Sprintf("waiting for %d sub-agent(s)", n)})
			return
		}
		r.emit(id, &event.Status{Status: event.Idle})
	}
}

// idleLater stops the session's computer once it has been idle for
// IdleStop, and forgets the session. r.mu is held.
func (r *Runtime) idleLater(l *live) {
	if r.o.IdleStop <= 0 || l.eng == nil || r.closed {
		return
	}
	r.idleWG.Add(1)
	var t *time.Timer
	t = time.AfterFunc(r.o.IdleStop, func() {
		defer r.idleWG.Done()
		r.mu.Lock()
		if l.running || l.idle != t || r.closed {
			r.mu.Unlock()
			return
		}
		l.idle = nil
		eng := l.eng
		l.eng = nil
		delete(r.live, l.id)
		r.mu.Unlock()
		if eng != nil {
			eng.close()
		}
	})
	l.idle = t
}

// stopIdle cancels the session's idle timer. r.mu is held.
func (r *Runtime) stopIdle(l *live) {
	if l.idle != nil && l.idle.Stop() {
		r.idleWG.Done()
	}
	l.idle = nil
}

// Cancel stops the session's running turn, and the sub-agents it
// started here. Messages queued behind it still run. It reports
// whether a turn was running in this process.
func (r *Runtime) Cancel(sessionID string) bool {
	r.mu.Lock()
	l := r.live[sessionID]
	running := l != nil && l.cancel != nil
	if running {
		l.cancel()
	}
	r.mu.Unlock()
	r.cancelSubagents(sessionID)
	return running
}

// Running reports whether a turn of the session runs in this process.
func (r *Runtime) Running(sessionID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.live[sessionID]
	return l != nil && l.running
}

// Devices are the browsers host commands reach.
func (r *Runtime) Devices() *Devices { return r.devices }

// RunningCount is how many sessions run a turn in this process.
func (r *Runtime) RunningCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.live {
		if l.running {
			n++
		}
	}
	return n
}

// Subscribe follows the events of a session ("" for every session)
// after the id after: those already stored, then live ones. keep, when
// set, filters them.
func (r *Runtime) Subscribe(sessionID string, after int64, keep func(store.Event) bool) *Subscription {
	return r.hub.subscribe(sessionID, after, keep)
}

// Sync returns once every event published so far is stored and handed
// to the subscriptions (Subscription.Poll then finds them).
func (r *Runtime) Sync() { r.hub.sync() }

// LastEventID is the id of the newest stored event.
func (r *Runtime) LastEventID(ctx context.Context) (int64, error) { return r.st.LastEventID(ctx) }

// emit publishes an event of a session, and the status it implies.
func (r *Runtime) emit(sessionID string, e any) {
	r.hub.publish(sessionID, e)
	switch e.(type) {
	case *permission.ApprovalRequest:
		r.hub.publish(sessionID, &event.Status{Status: event.Waiting, Detail: "an approval is needed"})
	case *permission.ApprovalResolved:
		if r.Running(sessionID) {
			r.hub.publish(sessionID, &event.Status{Status: event.Running})
		}
	}
}

// Publish publishes an event of a session ("" for none): an event
// type the event package knows (a face's notification, say).
func (r *Runtime) Publish(sessionID string, e any) { r.hub.publish(sessionID, e) }

// prompt waits for an answer to an approval from a face of this process
// (Answer), beside the starting face's own Prompt; the gate watches the
// store for answers from other processes meanwhile.
func (r *Runtime) prompt(ctx context.Context, req *permission.ApprovalRequest) (permission.Answer, error) {
	ch := make(chan permission.Answer, 2)
	r.mu.Lock()
	r.answers[req.ID] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.answers, req.ID)
		r.mu.Unlock()
	}()
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if r.o.Prompt != nil {
		wg.Go(func() {
			if a, err := r.o.Prompt(pctx, req); err == nil {
				ch <- a
			}
		})
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return permission.Answer{}, ctx.Err()
	}
}

// Answer answers an approval for a face: the first answer, from any
// face or process, wins; a later one gets store.ErrAnswered with the
// approval as it was decided.
func (r *Runtime) Answer(ctx context.Context, id string, approve bool, scope permission.Scope, by string) (store.Approval, error) {
	status := store.ApprovalDenied
	if approve {
		status = store.ApprovalApproved
	}
	if scope == "" {
		scope = permission.Once
	}
	a, err := r.st.AnswerApproval(ctx, id, store.ApprovalAnswer{Status: status, Scope: string(scope), DecidedBy: by})
	if err != nil {
		return a, err
	}
	r.mu.Lock()
	ch := r.answers[id]
	r.mu.Unlock()
	if ch != nil {
		select {
		case ch <- permission.Answer{Approve: approve, Scope: scope}:
		default:
		}
	}
	return a, nil
}

// watch runs, once a second, what other processes left behind:
// sessions a killed den left running are repaired and marked
// interrupted; what sub-agents nobody runs owe their parents is
// delivered; queued messages of sessions nobody runs are run.
func (r *Runtime) watch() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.recover(r.ctx)
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recover does one round of watch.
func (r *Runtime) recover(ctx context.Context) {
	stale, err := r.st.SessionsWithStatus(ctx, event.Running, event.Waiting, event.Queued)
	if err != nil {
		r.log.Warn("watch: sessions", "err", err)
		return
	}
	for _, id := range stale {
		if r.Running(id) {
			continue
		}
		lock, err := r.st.LockSession(ctx, id, r.o.Holder, false)
		if err != nil {
			continue // someone runs it, or it is gone
		}
		n, err := agent.Repair(ctx, loopStore{st: r.st}, id)
		switch {
		case err != nil:
			r.log.Warn("watch: repair", "session", id, "err", err)
		case n > 0:
			r.emit(id, &agent.WarningEvent{Message: fmt.Sprintf("%d tool call(s) were interrupted when den stopped; the model is told", n)})
			r.hub.publishWait(id, &event.Status{Status: event.Interrupted, Detail: "den stopped during the turn"})
		default:
			r.hub.publishWait(id, &event.Status{Status: event.Idle})
		}
		lock.Unlock()
	}
	// What sub-agents of a den that stopped still owe their parents.
	r.deliverOwed(ctx, "")
	queued, err := r.st.SessionsWithQueue(ctx)
	if err != nil {
		r.log.Warn("watch: queues", "err", err)
		return
	}
	for _, id := range queued {
		if r.Running(id) || ctx.Err() != nil {
			continue
		}
		lock, err := r.st.LockSession(ctx, id, r.o.Holder, false)
		if err != nil {
			continue
		}
		l, err := r.load(id)
		if err != nil {
			lock.Unlock()
			return
		}
		r.mu.Lock()
		if l.running || r.closed {
			r.mu.Unlock()
			lock.Unlock()
			continue
		}
		l.running = true
		r.startWorker(l, lock)
		r.mu.Unlock()
	}
}

// Shutdown stops the runtime the way den serve stops on SIGTERM: no new
// message is taken, running turns end at their next turn boundary (the
// running tool calls finish), and those still running after grace are
// canceled (their calls recorded as they end); then Close.
func (r *Runtime) Shutdown(grace time.Duration) {
	r.halting.Store(true)
	done := make(chan struct{})
	go func() {
		r.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
	}
	r.Close()
	<-done
}

// Close cancels the running turns, waits for them (their calls are
// recorded as they end), stops the computers and the event hub.
func (r *Runtime) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	engines := []*engine{}
	for _, l := range r.live {
		r.stopIdle(l)
		if l.eng != nil {
			engines = append(engines, l.eng)
			l.eng = nil
		}
	}
	r.mu.Unlock()
	r.idleWG.Wait()
	for _, e := range engines {
		e.close()
	}
	r.closeBrowsers()
	r.hub.close()
}

// Compact summarizes the older part of an idle session now (den chat's
// /compact) and returns how many messages the summary stands for.
func (r *Runtime) Compact(ctx context.Context, sessionID string, opts TurnOptions) (int, error) {
	l, err := r.load(sessionID)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	if l.running {
		r.mu.Unlock()
		return 0, fmt.Errorf("session %s is running a turn", sessionID)
	}
	l.running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		l.running = false
		r.idleLater(l)
		r.mu.Unlock()
	}()
	lock, err := r.st.LockSession(ctx, sessionID, r.o.Holder, false)
	if err != nil {
		return 0, err
	}
	defer lock.Unlock()
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	if err := r.ensureEngine(ctx, l, sess); err != nil {
		return 0, err
	}
	cfg, err := r.turnConfig(ctx, l.eng, sess, opts)
	if err != nil {
		return 0, err
	}
	c := cfg.Context
	history, err := c.Store.Messages(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	sums, err := c.Store.Summaries(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	res, err := c.Window.Compact(ctx, history, sums)
	if err != nil {
		return 0, err
	}
	if err := c.Store.AddSummary(ctx, sessionID, res.Summary, res.Compacted); err != nil {
		return 0, err
	}
	r.emit(sessionID, &agent.CompactionEvent{Compacted: res.Compacted, Kept: res.Kept})
	return res.Compacted, nil
}

// ModelRef is the model the session's next turn uses with override
// ("" for none): its first member's ref.
func (r *Runtime) ModelRef(sess store.Session, override string) (string, error) {
	res := &models.Resolver{Config: r.Config()}
	ref := firstNonEmpty(override, sess.Model, r.Config().Agent(sess.Agent).Model)
	var err error
	if ref == "" {
		if ref, err = res.Default(); err != nil {
			return "", err
		}
	}
	ts, err := res.Resolve(ref)
	if err != nil {
		return "", err
	}
	return ts[0].Ref, nil
}

// Delete removes a session with its sub-agents: its running turn is
// stopped (a turn in another den process makes it fail with
// store.ErrSessionBusy), its computer's session stopped, its record
// and its folders removed.
func (r *Runtime) Delete(ctx context.Context, sessionID string) error {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	// Its sub-agents go with it.
	kids, err := r.st.Subagents(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := r.Delete(ctx, k.ID); err != nil {
			return err
		}
	}
	r.mu.Lock()
	l := r.live[sessionID]
	if l != nil && l.cancel != nil {
		l.cancel()
	}
	r.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lock, err := r.st.LockSession(wctx, sessionID, r.o.Holder, r.Running(sessionID))
	if err != nil {
		return err
	}
	defer lock.Unlock()
	r.mu.Lock()
	var eng *engine
	if l := r.live[sessionID]; l != nil && !l.running {
		r.stopIdle(l)
		eng, l.eng = l.eng, nil
		delete(r.live, sessionID)
	}
	r.mu.Unlock()
	if eng != nil {
		eng.close()
	}
	r.forget(ctx, sess.Agent, sessionID, func(b *memory.Book) (int, error) { return b.RevokeSession(ctx, sessionID) })
	if err := r.st.DeleteSession(ctx, sessionID); err != nil {
		return err
	}
	r.skillsUsed.forget(sessionID)
	// The folders hold what the computer wrote: RemoveAll removes
	// symlinks planted there, never what they point to.
	return os.RemoveAll(filepath.Join(r.o.DataDir, "agents", sess.Agent, "sessions", sessionID))
}

// Create makes a session of agent whose turns use model ("" for the
// agent's model, else the default one), checking the model resolves.
func (r *Runtime) Create(ctx context.Context, agentName, model string) (store.Session, error) {
	if err := r.st.EnsureAgent(ctx, agentName); err != nil {
		return store.Session{}, err
	}
	ref, err := r.ModelRef(store.Session{Agent: agentName}, model)
	if err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if model == "" {
		model = firstNonEmpty(r.Config().Agent(agentName).Model, ref)
	}
	return r.st.CreateSession(ctx, agentName, model)
}

// Folders are where a session's folders are on the host, and whom the
// files den puts there for the computer must belong to (nil: den's own
// ids, which are the computer's root's).
type Folders struct {
	Workspace   string // the computer's /workspace
	Attachments string // the computer's /den/attachments
	Offloads    string // the computer's /den/offloads: full outputs of capped commands
	Browser     string // the computer's /den/browser
	Memory      string // the agent's /den/memory
	Skills      string // the agent's /den/skills
	Shared      string // the agent's /den/shared
	Owner       *hostfs.Owner
}

// Folders opens the session's computer (provisioning it if need be) and
// says where the session's folders are. They are folders the computer
// can change at any moment: use hostfs in them.
func (r *Runtime) Folders(ctx context.Context, sessionID string) (Folders, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return Folders{}, err
	}
	comp, _, err := r.computer(ctx, sess.Agent)
	if err != nil {
		return Folders{}, err
	}
	dir := comp.SessionDir(sess.ID)
	f := Folders{Workspace: filepath.Join(dir, "workspace"), Attachments: filepath.Join(dir, "attachments"),
		Offloads: filepath.Join(dir, "offloads"), Browser: filepath.Join(dir, "browser"),
		Memory: comp.AgentDir("memory"), Skills: comp.AgentDir("skills"), Shared: comp.AgentDir("shared"), Owner: computerOwner(comp)}
	for _, d := range []string{f.Workspace, f.Attachments, f.Offloads} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Folders{}, err
		}
		if f.Owner != nil {
			// A folder den just made is den's: give it to the computer's
			// root, as the computer makes its own (no symlink can be
			// planted in a folder that did not exist).
			os.Lchown(d, f.Owner.UID, f.Owner.GID)
		}
	}
	return f, nil
}

// StartRaw starts cmd in the session's computer as a process of its own,
// with the session's folders and mounts but no host commands (the
// terminal of a person: den sh, the API's terminal); cleanup releases
// what it holds once the process has ended.
func (r *Runtime) StartRaw(ctx context.Context, sessionID string, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	comp, o, err := r.computer(ctx, sess.Agent)
	if err != nil {
		return nil, nil, err
	}
	return comp.StartRaw(ctx, sess.ID, o, cmd)
}

// computer opens an agent's computer: one call per agent at a time, so
// that sessions of a new agent starting together provision it once.
func (r *Runtime) computer(ctx context.Context, agentName string) (*computer.Computer, computer.SessionOptions, error) {
	m, _ := r.provision.LoadOrStore(agentName, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	comp, o, err := r.o.Computer(ctx, agentName)
	// Every computer of a session reports its connections as the
	// session's events (the engine's also keeps the refused ones), and
	// follows the agent's policy as the config changes.
	o.Egress.Record = r.egressRecord(nil)
	start := o.Egress.Policy
	o.Egress.Current = func() egress.Policy {
		if p, err := r.Config().Agent(agentName).EgressPolicy(); err == nil {
			return p
		}
		return start
	}
	return comp, o, err
}
