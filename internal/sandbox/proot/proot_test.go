package proot_test

import (
	"os"
	"testing"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/proot"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary serve as the reaper, as den's own
// binary does.
func TestMain(m *testing.M) {
	proot.MaybeReaper()
	os.Exit(m.Run())
}

func newBackend(t testing.TB) sandbox.Backend {
	sandboxtest.Need(t, "proot", "proot")
	b, err := proot.New("")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	sandboxtest.RunSuite(t, newBackend, sandboxtest.Caps{})
}
