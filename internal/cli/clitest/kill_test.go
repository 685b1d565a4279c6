package clitest

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// startDen starts den in the background; the test kills it, if it is
// still running, and whatever runs argv when it ends.
func startDen(t *testing.T, d *Den, argv []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := d.Command(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, argv...)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			waitDen(t, cmd)
		}
		if t.Failed() {
			t.Logf("den's stderr:\n%s", stderr.String())
		}
	})
	return cmd
}

// waitDen waits for den to exit, for at most RunBound; then it kills
// den and fails the test.
func waitDen(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(RunBound):
		cmd.Process.Kill()
		<-done
		t.Errorf("den did not exit within %v; killed", RunBound)
	}
}

func TestKilledDenLeavesNothing(t *testing.T) {
	t.Parallel()
	for i, backend := range []string{"bwrap", "proot"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			d := newDen(t)
			if backend == "proot" {
				sandboxtest.Need(t, "proot", "proot")
			}
			provision(t, d, "default")
			arg := uniqueSleep(t, 987+i)
			sleep := []string{"sleep", arg}
			script := "sleep " + arg + " & setsid sleep " + arg + " & sleep " + arg
			cmd := startDen(t, d, sleep, "--backend", backend, "exec", "--", "sh", "-c", script)

			if pids := WaitProcs(3, sleep...); len(pids) != 3 {
				t.Fatalf("want 3 processes running %q, found %v", sleep, pids)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitDen(t, cmd)
			if left := WaitNoProcs(sleep...); len(left) > 0 {
				t.Errorf("den was killed, but %v still run %q", left, sleep)
			}
		})
	}
}

func TestInterruptedDenStopsCommand(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")
	arg := uniqueSleep(t, 30)
	sleep := []string{"sleep", arg}
	cmd := startDen(t, d, sleep, "exec", "--", "sleep", arg)

	if pids := WaitProcs(1, sleep...); len(pids) != 1 {
		t.Fatalf("want 1 process running %q, found %v", sleep, pids)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitDen(t, cmd)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("den interrupted: want exit 130, got %v", cmd.ProcessState)
	}
	if left := WaitNoProcs(sleep...); len(left) > 0 {
		t.Errorf("den was interrupted, but %v still run %q", left, sleep)
	}
}
