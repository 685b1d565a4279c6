package bwrap_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// unprivBound is the longest the conformance suite may take as the
// throwaway user before the test kills it and fails: a limit, not an
// expectation.
const unprivBound = 5 * time.Minute

// TestConformanceUnprivileged runs the conformance suite as an ordinary
// user: den then maps that user to root in the sandbox's user namespace
// instead of a 65536-id range, bounds processes with RLIMIT_NPROC, and
// has no control groups. As root, the test makes a throwaway system
// account and runs this very test binary as it.
func TestConformanceUnprivileged(t *testing.T) {
	u := sandboxtest.NewUser(t)
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := u.Install(t, self, "bwrap.test")
	ctx, cancel := context.WithTimeout(context.Background(), unprivBound)
	defer cancel()
	cmd := u.Command(ctx, bin, "-test.run", "^TestConformance$", "-test.v", "-test.count=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the suite as %s: still running after %v, killed\n%s", u.Name, unprivBound, out.String())
	case err != nil:
		t.Fatalf("the suite as %s (uid %d): %v\n%s", u.Name, u.UID, err, out.String())
	case !strings.HasSuffix(out.String(), "\nPASS\n") || !strings.Contains(out.String(), "--- PASS: TestConformance "):
		t.Fatalf("the suite as %s did not report PASS:\n%s", u.Name, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("the suite as %s skipped tests:\n%s", u.Name, out.String())
	}
	t.Logf("the conformance suite passed as %s (uid %d)", u.Name, u.UID)
}
