package netns_test

import (
	"context"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/netns"
)

// TestAttachOutlivesThread: slirp4netns lives on after the goroutine
// that attached it ends and takes its OS thread with it (as hostfs's
// reads as the computer's root do). Pdeathsig follows the thread that
// forked, not den: started from such a thread, the computer's network
// died with it.
func TestAttachOutlivesThread(t *testing.T) {
	e := newEnv(t)
	b := e.startBox(t, true, nil, e.busybox, "sleep", "30")
	b.toGate(t)
	o := e.options(t)
	done := make(chan *netns.Net, 1)
	var ask func()
	ask = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == unix.Getpid() {
			// The main thread is never ended: ask from another.
			runtime.UnlockOSThread()
			go ask()
			return
		}
		n, err := netns.Attach(context.Background(), b.pid, o)
		if err != nil {
			t.Error(err)
		}
		done <- n
	}
	go ask()
	n := <-done
	if n == nil {
		return
	}
	defer n.Close()
	if gone(n.Pid(), 20) {
		t.Errorf("slirp4netns (pid %d) died with the thread that started it", n.Pid())
	}
}
