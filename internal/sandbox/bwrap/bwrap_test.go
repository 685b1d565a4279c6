package bwrap_test

import (
	"strings"
	"testing"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/sandboxtest"
)

func newBackend(t testing.TB) sandbox.Backend {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	sandboxtest.RunSuite(t, newBackend, sandboxtest.Caps{Isolates: true})
}

// TestTmpIsBounded: /tmp is a tmpfs of the size asked for, not half the
// host's memory.
func TestTmpIsBounded(t *testing.T) {
	e := sandboxtest.Start(t, newBackend(t), func(o *sandbox.SessionOptions) { o.Spec.Limits.TmpBytes = 32 << 20 })
	r := e.Run(t, "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; echo rc=$?")
	if !strings.Contains(r.Output, "No space left") || strings.Contains(r.Output, "rc=0") {
		t.Errorf("wrote 64 MiB into a 32 MiB /tmp: %q", r.Output)
	}
}
