package auth

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

// limiter counts failed attempts per client in a sliding window: a
// client with limit failures in the last window is blocked until the
// oldest of them is a window old. It tracks at most max clients; a new
// one evicts the one whose last failure is oldest.
type limiter struct {
	limit  int
	window time.Duration
	max    int

	mu      sync.Mutex
	clients map[netip.Addr]*list.Element // of *failures
	order   *list.List                   // most recent failure first
}

// failures are one client's failure times within the window, oldest
// first, at most limit of them.
type failures struct {
	ip    netip.Addr
	times []time.Time
}

func newLimiter(limit int, window time.Duration, max int) *limiter {
	return &limiter{limit: limit, window: window, max: max,
		clients: map[netip.Addr]*list.Element{}, order: list.New()}
}

// try runs check, which verifies a credential, unless ip is blocked, in
// which case it returns how long to wait. A false check counts as a
// failure. check runs under the limiter's lock, so parallel guesses from
// one client cannot overshoot the limit; it must be quick.
func (l *limiter) try(ip netip.Addr, now time.Time, check func() bool) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.clients[ip]
	if e != nil {
		f := e.Value.(*failures)
		f.prune(now, l.window)
		if len(f.times) >= l.limit {
			return false, f.times[0].Add(l.window).Sub(now)
		}
	}
	if check() {
		return true, 0
	}
	if e == nil {
		if len(l.clients) >= l.max {
			old := l.order.Back()
			delete(l.clients, old.Value.(*failures).ip)
			l.order.Remove(old)
		}
		e = l.order.PushFront(&failures{ip: ip, times: make([]time.Time, 0, l.limit)})
		l.clients[ip] = e
	}
	f := e.Value.(*failures)
	f.times = append(f.times, now)
	l.order.MoveToFront(e)
	return false, 0
}

// prune drops failures a window old or older.
func (f *failures) prune(now time.Time, window time.Duration) {
	n := 0
	for n < len(f.times) && now.Sub(f.times[n]) >= window {
		n++
	}
	f.times = append(f.times[:0], f.times[n:]...)
}
