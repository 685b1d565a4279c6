package sandbox

import "errors"

var (
	// ErrBadMount is a user mount that cannot be honoured.
	ErrBadMount = errors.New("bad mount")
	// ErrUnavailable means the sandbox cannot start on this host; den
	// refuses to run commands rather than run them unisolated.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrClosed is returned for commands sent to a stopped session.
	ErrClosed = errors.New("session closed")
	// ErrBadTimeout is a timeout den will not honour.
	ErrBadTimeout = errors.New("bad timeout")
)
