package clitest

import (
	"fmt"
	"hash/crc32"
	"os"
	"syscall"
	"testing"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// denBin is the den binary TestMain built for every test of the package.
var denBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "den-clitest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if denBin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newDen returns a den of the test's own, once the tools every computer
// needs are there: bwrap for the sandbox, busybox for --rootfs busybox.
func newDen(t testing.TB) *Den {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	return New(t, denBin)
}

// provision creates the agent's computer from the busybox rootfs.
func provision(t *testing.T, d *Den, agent string) {
	t.Helper()
	d.MustRun("exec", "--agent", agent, "--rootfs", "busybox", "--", "true")
}

// uniqueSleep is a sleep argument no other test, and no other run of
// this test binary, uses: processes are then found by exact argv.
func uniqueSleep(t *testing.T, whole int) string {
	return fmt.Sprintf("%d.%d%04d", whole, os.Getpid(), crc32.ChecksumIEEE([]byte(t.Name()))%10000)
}

// killOnCleanup kills, when the test ends, whatever still runs argv, so
// that a failing test leaves nothing running either.
func killOnCleanup(t *testing.T, argv ...string) {
	t.Cleanup(func() {
		for _, pid := range Procs(argv...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}
