package bwrap_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
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
	sandboxtest.Need(t, "busybox", "busybox-static")
	runAs(t, u, "TestConformance")
	t.Logf("the conformance suite passed as %s (uid %d)", u.Name, u.UID)
}

// TestSubordinateIDs: an ordinary user with subordinate ids in
// /etc/subuid and /etc/subgid gets them mapped through newuidmap and
// newgidmap: root inside is the user, ids 1 and up are its range, and
// nothing maps to host root. As root, the test gives a throwaway user a
// range and runs TestSubordinateIDsInside as it.
func TestSubordinateIDs(t *testing.T) {
	u := sandboxtest.NewUser(t)
	sandboxtest.Need(t, "newuidmap", "uidmap")
	first := u.AddSubIDs(t)
	runAs(t, u, "TestSubordinateIDsInside", "DEN_TEST_SUBID="+strconv.FormatUint(uint64(first), 10), "DEN_TEST_UID="+strconv.Itoa(u.UID))
}

// runAs runs this test binary's test name as u, with env added, and
// fails unless it passed without skipping anything.
func runAs(t *testing.T, u *sandboxtest.User, name string, env ...string) {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := u.Install(t, self, "bwrap.test")
	ctx, cancel := context.WithTimeout(context.Background(), unprivBound)
	defer cancel()
	cmd := u.Command(ctx, bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s as %s: still running after %v, killed\n%s", name, u.Name, unprivBound, out.String())
	case err != nil:
		t.Fatalf("%s as %s (uid %d): %v\n%s", name, u.Name, u.UID, err, out.String())
	case !strings.HasSuffix(out.String(), "\nPASS\n") || !strings.Contains(out.String(), "--- PASS: "+name+" "):
		t.Fatalf("%s as %s did not report PASS:\n%s", name, u.Name, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("%s as %s skipped tests:\n%s", name, u.Name, out.String())
	}
}

func TestSubordinateIDsInside(t *testing.T) {
	first := os.Getenv("DEN_TEST_SUBID")
	if first == "" {
		t.Skip("run by TestSubordinateIDs as a throwaway user")
	}
	ids := sandboxtest.IDs(t)
	if !ids.Helper || len(ids.UIDs) != 2 || strconv.FormatUint(uint64(ids.UIDs[1].Host), 10) != first {
		t.Fatalf("den's map for a user with subordinate ids: %+v", ids)
	}
	e := sandboxtest.Start(t, newBackend(t))
	r := e.Run(t, "cat /proc/self/uid_map /proc/self/gid_map; id -u")
	want := "0 " + os.Getenv("DEN_TEST_UID") + " 1\n1 " + first + " 65535\n"
	got := strings.Join(strings.Fields(r.Output), " ")
	if !strings.Contains(got, strings.Join(strings.Fields(want), " ")) || !strings.HasSuffix(got, " 0") {
		t.Errorf("inside: %q, want the maps %q and root", r.Output, want)
	}
}
