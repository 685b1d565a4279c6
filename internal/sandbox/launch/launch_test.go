package launch

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestChildOutlivesAskingThread: a child started with Pdeathsig through
// Start lives on after the goroutine that asked for it ends and takes
// its OS thread with it; started with cmd.Start from that goroutine, it
// would be killed then.
func TestChildOutlivesAskingThread(t *testing.T) {
	done := make(chan *exec.Cmd, 1)
	var ask func()
	ask = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == unix.Getpid() {
			runtime.UnlockOSThread() // the main thread is never ended
			go ask()
			return
		}
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := Start(cmd); err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- cmd
	}
	go ask()
	cmd := <-done
	if cmd == nil {
		return
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the child died with the thread that asked for it: %v", err)
	case <-time.After(time.Second):
	}
}
