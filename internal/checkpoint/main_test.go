package checkpoint_test

import (
	"os"
	"testing"

	"den.dev/den/internal/checkpoint"
)

// TestMain lets the test binary serve as the checkpoint helper, which an
// ordinary user's den runs to read and restore its computer's other
// users' files (the unprivileged tests run this binary as a throwaway
// user).
func TestMain(m *testing.M) {
	checkpoint.MaybeHelper()
	os.Exit(m.Run())
}
