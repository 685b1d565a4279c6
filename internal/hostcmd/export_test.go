package hostcmd

import "time"

// WithClock makes a broker read the time from now, for its rate limits
// and its log throttling.
func WithClock(now func() time.Time) Option {
	return func(b *Broker) { b.now = now }
}

// Buffered is how much of l's budget of stdin its calls hold.
func Buffered(l *Listener) int64 {
	l.stdin.mu.Lock()
	defer l.stdin.mu.Unlock()
	return l.limits.MaxBufferedBytes - l.stdin.free
}

// Refusing is how many refused calls l is still reading the name of.
func Refusing(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.adm.refusing
}
