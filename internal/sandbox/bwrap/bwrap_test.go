package bwrap_test

import (
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
