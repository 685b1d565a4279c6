package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"den.dev/den/internal/event"
	"den.dev/den/internal/store"
)

// hub publishes events: it stores them (the store gives each its id)
// and then hands them to every subscriber. A subscriber only ever sees
// stored events, so one that reconnects after id N finds everything
// after N in the store, in order, exactly once. Events other den
// processes store (den run in a terminal while the daemon serves) reach
// the subscribers too: the hub reads every new event from the store,
// after its own writes and every pollEvery.
type hub struct {
	st  *store.Store
	log *slog.Logger

	in   chan pending
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex
	subs map[*Subscription]struct{}
	last int64 // the newest event handed to the subscribers
	wake chan struct{}
}

// pending is an event on its way to the store. stored, when set, is
// closed once it is stored (or could not be).
type pending struct {
	ev     store.Event
	stored chan struct{}
}

const (
	// pollEvery is how often the hub looks for events of other den
	// processes.
	pollEvery = 100 * time.Millisecond
	// batchMax bounds the events stored in one transaction.
	batchMax = 256
	// subBuffer is how many events a subscriber may fall behind the
	// live stream before it catches up from the store instead.
	subBuffer = 1024
)

func newHub(st *store.Store, log *slog.Logger) (*hub, error) {
	last, err := st.LastEventID(context.Background())
	if err != nil {
		return nil, err
	}
	h := &hub{st: st, log: log, in: make(chan pending, 4096), stop: make(chan struct{}), done: make(chan struct{}),
		subs: map[*Subscription]struct{}{}, last: last, wake: make(chan struct{}, 1)}
	go h.run()
	return h, nil
}

// publish stores e as an event of session ("" for none) and hands it to
// the subscribers. It does not wait for the store; events of one
// publisher keep their order.
func (h *hub) publish(session string, e any) {
	h.send(session, e, nil)
}

// publishWait is publish, returning once the event is stored.
func (h *hub) publishWait(session string, e any) {
	done := make(chan struct{})
	if h.send(session, e, done) {
		<-done
	}
}

func (h *hub) send(session string, e any, stored chan struct{}) bool {
	typ, data, ok := event.Encode(e)
	if !ok {
		return false
	}
	select {
	case h.in <- pending{ev: store.Event{Session: session, Type: typ, Time: time.Now(), Data: data}, stored: stored}:
		return true
	case <-h.stop:
		return false
	}
}

// run stores what is published, in batches, and fans out what is new.
func (h *hub) run() {
	defer close(h.done)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case p := <-h.in:
			batch := []pending{p}
		drain:
			for len(batch) < batchMax {
				select {
				case p := <-h.in:
					batch = append(batch, p)
				default:
					break drain
				}
			}
			h.store(batch)
			h.fanOut()
			for _, p := range batch {
				if p.stored != nil {
					close(p.stored)
				}
			}
		case <-tick.C:
			h.fanOut()
		case <-h.stop:
			// Store what is still on its way, then stop.
			for {
				select {
				case p := <-h.in:
					h.store([]pending{p})
					if p.stored != nil {
						close(p.stored)
					}
				default:
					h.fanOut()
					return
				}
			}
		}
	}
}

func (h *hub) store(batch []pending) {
	evs := make([]store.Event, 0, len(batch))
	for _, p := range batch {
		if p.ev.Type != "" { // a sync marker has no event
			evs = append(evs, p.ev)
		}
	}
	if len(evs) == 0 {
		return
	}
	// A write that fails is retried a few times: a busy database (another
	// process's long write) is the likely cause, and the events are the
	// faces' record of the session.
	var err error
	for attempt := range 5 {
		if _, err = h.st.AddEvents(context.Background(), evs); err == nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	if err != nil {
		h.log.Error("events not stored", "events", len(evs), "err", err)
	}
}

// sync returns once everything published before it is stored and
// handed to the subscribers.
func (h *hub) sync() {
	done := make(chan struct{})
	select {
	case h.in <- pending{stored: done}:
		<-done
	case <-h.stop:
	}
}

// fanOut reads the events after the last one handed out and gives them
// to the subscribers.
func (h *hub) fanOut() {
	for {
		h.mu.Lock()
		after := h.last
		h.mu.Unlock()
		evs, err := h.st.Events(context.Background(), "", after, 1000)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				h.log.Warn("reading new events", "err", err)
			}
			return
		}
		if len(evs) == 0 {
			return
		}
		h.mu.Lock()
		for _, e := range evs {
			for s := range h.subs {
				s.offer(e)
			}
		}
		h.last = evs[len(evs)-1].ID
		h.mu.Unlock()
		if len(evs) < 1000 {
			return
		}
	}
}

func (h *hub) close() {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	for s := range h.subs {
		s.closeLocked()
	}
	h.mu.Unlock()
}

// Subscription is a stream of a session's events (or of every
// session's) after an id: first those already stored, then the live
// ones, each exactly once and in order.
type Subscription struct {
	h       *hub
	session string                 // "" for every session
	keep    func(store.Event) bool // nil keeps everything

	ch      chan store.Event
	behind  chan struct{} // signalled when ch overflowed
	closed  chan struct{}
	once    sync.Once
	last    int64
	replay  bool
	pending []store.Event
}

// subscribe starts a subscription to session's events after the id
// after; session "" follows every session. keep, when set, filters.
func (h *hub) subscribe(session string, after int64, keep func(store.Event) bool) *Subscription {
	s := &Subscription{h: h, session: session, keep: keep, ch: make(chan store.Event, subBuffer),
		behind: make(chan struct{}, 1), closed: make(chan struct{}), last: after, replay: true}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// offer hands e to s unless s is full; then s catches up from the
// store. The hub's lock is held.
func (s *Subscription) offer(e store.Event) {
	if s.session != "" && e.Session != s.session {
		return
	}
	if s.keep != nil && !s.keep(e) {
		return
	}
	select {
	case s.ch <- e:
	default:
		select {
		case s.behind <- struct{}{}:
		default:
		}
	}
}

// ErrClosed is Next's error once the subscription or its runtime is
// closed.
var ErrClosed = errors.New("session: subscription closed")

// Next returns the next event, waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (store.Event, error) {
	for {
		e, ok, err := s.Poll(ctx)
		if err != nil || ok {
			return e, err
		}
		select {
		case e := <-s.ch:
			s.pending = append(s.pending, e)
		case <-s.behind:
			// Fell behind the live stream: what was missed is in the
			// store.
			s.drain()
			s.replay = true
		case <-s.closed:
			return store.Event{}, ErrClosed
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
}

// Poll is Next without waiting: ok is false when no event is ready.
func (s *Subscription) Poll(ctx context.Context) (e store.Event, ok bool, err error) {
	for {
		for len(s.pending) > 0 {
			e := s.pending[0]
			s.pending = s.pending[1:]
			if e.ID <= s.last {
				continue
			}
			// An event the filter drops is passed too, or a replay would
			// read it again.
			s.last = e.ID
			if s.keep != nil && !s.keep(e) {
				continue
			}
			return e, true, nil
		}
		if s.replay {
			page, err := s.h.st.Events(ctx, s.session, s.last, 500)
			if err != nil {
				return store.Event{}, false, err
			}
			if len(page) > 0 {
				s.pending = page
				continue
			}
			s.replay = false
		}
		select {
		case e := <-s.ch:
			s.pending = append(s.pending, e)
		case <-s.behind:
			s.drain()
			s.replay = true
		default:
			return store.Event{}, false, nil
		}
	}
}

// Last is the id of the last event the subscription has passed,
// returned or dropped by its filter (or the id it started after).
func (s *Subscription) Last() int64 { return s.last }

func (s *Subscription) drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.closeLocked()
}

func (s *Subscription) closeLocked() {
	s.once.Do(func() {
		delete(s.h.subs, s)
		close(s.closed)
	})
}
