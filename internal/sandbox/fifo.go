package sandbox

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// poller reads a command's output FIFOs with epoll from a single
// goroutine, so that what the streams produce is taken in the order the
// kernel reports it, and so that "everything written so far" can be
// drained without waiting for an end of file that background processes
// may never give.
type poller struct {
	ep   int
	wake int // an eventfd: any write interrupts Wait
	fds  []int
}

func newPoller(fds ...int) (*poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: epoll: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("sandbox: eventfd: %w", err)
	}
	p := &poller{ep: ep, wake: wake, fds: fds}
	for i, fd := range append([]int{wake}, fds...) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			p.close()
			return nil, fmt.Errorf("sandbox: epoll add: %w", err)
		}
	}
	return p, nil
}

// Wake interrupts a Wait from another goroutine.
func (p *poller) Wake() {
	var one = [8]byte{1}
	unix.Write(p.wake, one[:])
}

// wait blocks until a FIFO has data, Wake is called, or d passes. It
// returns the indexes (into fds) that are readable.
func (p *poller) wait(d time.Duration, ready []int) []int {
	ready = ready[:0]
	var evs [8]unix.EpollEvent
	ms := int(d / time.Millisecond)
	if d > 0 && ms == 0 {
		ms = 1
	}
	if d < 0 {
		ms = -1
	}
	n, err := unix.EpollWait(p.ep, evs[:], ms)
	if err != nil {
		return ready
	}
	for _, ev := range evs[:n] {
		if ev.Fd == 0 {
			var b [8]byte
			unix.Read(p.wake, b[:])
			continue
		}
		ready = append(ready, int(ev.Fd)-1)
	}
	return ready
}

// read reads what fd i holds now, up to a bound, calling f per chunk. It
// returns false when the descriptor failed.
func (p *poller) read(i int, buf []byte, f func([]byte)) bool {
	for range 64 {
		n, err := unix.Read(p.fds[i], buf)
		if n > 0 {
			f(buf[:n])
		}
		if errors.Is(err, unix.EAGAIN) || (err == nil && n < len(buf)) {
			return true
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
	}
	return true
}

func (p *poller) close() {
	unix.Close(p.ep)
	unix.Close(p.wake)
}

// openFIFO makes a FIFO and opens it read-write and non-blocking: den
// holds both ends, so opening never blocks and the reader never sees an
// end of file while den keeps it open.
func openFIFO(path string, own owner) (int, error) {
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return -1, fmt.Errorf("sandbox: mkfifo %s: %w", path, err)
	}
	if err := own.give(path); err != nil {
		return -1, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox: open %s: %w", path, err)
	}
	return fd, nil
}
