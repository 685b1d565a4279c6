package callfix

import "errors"

// The kinds of call Fix refuses; an error from Fix wraps one of them
// (test with errors.Is). Its text is written for the model.
var (
	// ErrUnknownTool: no tool has the name, or one close enough to it.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrTruncated: the arguments were cut off in transit and running
	// what arrived could do harm (a cut file, a cut command).
	ErrTruncated = errors.New("truncated arguments")
	// ErrMalformed: the arguments are not JSON, or not a JSON object,
	// and could not be repaired.
	ErrMalformed = errors.New("malformed arguments")
	// ErrInvalid: the arguments break the tool's schema even after
	// coercion.
	ErrInvalid = errors.New("invalid arguments")
)

// Error is a refused call: Kind is one of the errors above, Msg what
// the model is told.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }
