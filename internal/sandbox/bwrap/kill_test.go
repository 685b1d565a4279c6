package bwrap

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestKillAfterExit: killing a sandbox whose processes have all exited
// signals nobody, not even a host process that got the pid its pid 1
// had.
func TestKillAfterExit(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	if os.Geteuid() != 0 {
		t.Skip("placing a process at a chosen pid needs root (ns_last_pid)")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	b, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Rootfs: sandboxtest.Rootfs(t), IDs: sandboxtest.IDs(t)}
	proc, err := b.Start(context.Background(), spec, &sandbox.Cmd{Args: []string{"/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	child := proc.(*process).child
	if child <= 0 {
		t.Fatal("no child pid recorded")
	}
	// bwrap leaves its child to be reaped by the nearest subreaper
	// (the host's init): the test is that subreaper, so the pid is
	// free again once reaped, as on a host whose init reaps.
	var ws unix.WaitStatus
	for deadline := time.Now().Add(10 * time.Second); ; {
		pid, err := unix.Wait4(child, &ws, unix.WNOHANG, nil)
		if pid == child || err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's pid 1 was not reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Start a host process at the pid the sandbox's pid 1 had. Other
	// processes (a thread of the test's own, at first) may take it
	// first: try a few times.
	var victim *exec.Cmd
	last := child - 1
	for range 20 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(last)), 0); err != nil {
			t.Skipf("cannot choose the next pid here: %v", err)
		}
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if c.Process.Pid == child {
			victim = c
			break
		}
		c.Process.Kill()
		c.Wait()
	}
	if victim == nil {
		t.Skip("another process kept taking the pid")
	}
	defer func() {
		victim.Process.Kill()
		victim.Wait()
	}()
	proc.Kill()
	time.Sleep(100 * time.Millisecond)
	if err := unix.Kill(child, 0); err != nil {
		t.Fatalf("the host process at the sandbox's old pid is gone: %v", err)
	}
	if pid, _ := unix.Wait4(victim.Process.Pid, &ws, unix.WNOHANG, nil); pid != 0 {
		t.Fatalf("the host process at the sandbox's old pid was killed: %v", ws)
	}
}
