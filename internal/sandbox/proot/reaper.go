package proot

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
)

// reaperArg, as den's first argument, runs den as a reaper.
const reaperArg = "__den-proot-reaper"

// tmpEnv passes the reaper the sandbox's /tmp folder to remove at the
// end; the reaper unsets it before starting proot.
const tmpEnv = "DEN_PROOT_TMP"

// MaybeReaper runs the reaper and exits when den was started as one;
// otherwise it returns at once. den's main calls it first thing (and so
// does a test binary that starts proot sandboxes).
//
// The reaper waits for one byte on fd 3 (so den can place it in a
// control group first), becomes a child subreaper, and runs its
// arguments. When the command exits, when den dies (the parent-death
// signal) or when den asks (SIGTERM), it kills every process below it,
// reparented orphans included, and exits.
func MaybeReaper() {
	if len(os.Args) < 3 || os.Args[1] != reaperArg {
		return
	}
	os.Exit(reap(os.Args[2:]))
}

func reap(args []string) int {
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() == 1 {
		return 1 // den is already gone
	}
	tmp := os.Getenv(tmpEnv)
	os.Unsetenv(tmpEnv)
	if tmp != "" && strings.HasPrefix(filepath.Base(tmp), "den-proot-tmp-") {
		defer os.RemoveAll(tmp)
	}
	block := os.NewFile(3, "block")
	var b [1]byte
	if n, _ := block.Read(b[:]); n != 1 {
		return 1
	}
	block.Close()
	c := exec.Command(args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "den reaper:", err)
		return 127
	}
	exited := make(chan int, 1)
	go func() {
		// Reap everything: the command and the orphans handed to us.
		main := c.Process.Pid
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, 0, nil)
			if err == unix.ECHILD {
				return
			}
			if pid == main {
				code := ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
				exited <- code
			}
		}
	}()
	code := 0
	select {
	case code = <-exited:
	case <-sigs:
		code = 137
	}
	killBelow(os.Getpid())
	return code
}

// killBelow SIGKILLs every process below pid until none is left.
func killBelow(pid int) {
	for range 100 {
		var procs []sandbox.ProcInfo
		for _, p := range sandbox.AllPids() {
			if pi, ok := sandbox.ReadProc(p); ok {
				procs = append(procs, pi)
			}
		}
		below := sandbox.Descendants(procs, pid)
		if len(below) == 0 {
			return
		}
		for _, p := range below {
			unix.Kill(p, unix.SIGKILL)
		}
		// Let the reaping goroutine collect them before looking again.
		unix.Nanosleep(&unix.Timespec{Nsec: 2_000_000}, nil)
	}
}
