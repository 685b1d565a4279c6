package browser

import (
	"os"
	"testing"

	"den.dev/den/internal/sandbox/netns"
)

// TestMain lets the test binary serve as den's network helper, which an
// ordinary user's den runs in each computer's namespaces (the
// unprivileged tests run this binary as a throwaway user).
func TestMain(m *testing.M) {
	netns.MaybeHelper()
	os.Exit(m.Run())
}
