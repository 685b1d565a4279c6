package schedule

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Clock is the scheduler's time: the wall clock in den serve, a fake
// one in tests.
type Clock interface {
	Now() time.Time
	// Until returns a channel that is closed once the wall clock reads
	// t or later (or may have jumped: the caller looks at Now again),
	// and a func that stops the wait and releases what it holds.
	Until(t time.Time) (<-chan struct{}, func())
}

// WallClock is the machine's clock. Until sleeps on a timerfd set to
// the wall-clock time (CLOCK_REALTIME, absolute), not on a Go timer:
// Go's timers count monotonic time, which stops while the machine is
// suspended, so a laptop that sleeps through 07:00 would wake den hours
// late. The timer fires at the wall time, on resume if need be, and
// when the clock is set (TFD_TIMER_CANCEL_ON_SET), so that den plans
// again after a change of the clock.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Until waits on a timerfd, or a Go timer where timerfd is missing.
func (WallClock) Until(t time.Time) (<-chan struct{}, func()) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err == nil {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(t.UnixNano(), 1))}
		if err = unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET, &spec, nil); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		tm := time.NewTimer(time.Until(t))
		ch := make(chan struct{})
		done := make(chan struct{})
		go func() {
			select {
			case <-tm.C:
				close(ch)
			case <-done:
			}
		}()
		return ch, func() { tm.Stop(); close(done) }
	}
	// A non-blocking fd goes to Go's poller: the read below parks the
	// goroutine, and closing the file ends it.
	f := os.NewFile(uintptr(fd), "timerfd")
	ch := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		var buf [8]byte
		for {
			_, err := f.Read(buf[:])
			switch {
			case err == nil, errors.Is(err, unix.ECANCELED):
				close(ch)
				return
			case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
				continue
			}
			return // closed
		}
	}()
	return ch, func() {
		f.Close()
		<-ended
	}
}
