package retry

import (
	"errors"
	"fmt"
	"strings"
)

// ErrStall means no stream event arrived within Policy.Stall; the
// attempt was canceled.
var ErrStall = errors.New("stream stalled")

// Error is how one target failed: its class and its last error.
// Attempts is how many times it was tried (0: skipped, never asked).
type Error struct {
	Ref      string
	Class    Class
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	switch e.Attempts {
	case 0:
		return fmt.Sprintf("%s: skipped: %v", e.Ref, e.Err)
	case 1:
		return fmt.Sprintf("%s: %s: %v", e.Ref, e.Class, e.Err)
	}
	return fmt.Sprintf("%s: %s after %d attempts: %v", e.Ref, e.Class, e.Attempts, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ExhaustedError means every target failed; Failures holds one Error
// per target, in order. It classifies as its last failure.
type ExhaustedError struct {
	Failures []*Error
}

func (e *ExhaustedError) Error() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.Error()
	}
	return "retry: every model failed: " + strings.Join(parts, "; ")
}

// Unwrap returns the failures, so errors.Is finds any target's cause.
func (e *ExhaustedError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f
	}
	return out
}
