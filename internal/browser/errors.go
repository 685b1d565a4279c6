package browser

import "errors"

var (
	// ErrUnavailable is wrapped by the errors of a browser that cannot
	// run on this host: Chromium, bwrap or nsenter missing, or a
	// computer without namespaces of its own.
	ErrUnavailable = errors.New("browser unavailable")
	// ErrNoComputer is wrapped when the session's computer is not
	// running, or stopped while den looked at it.
	ErrNoComputer = errors.New("computer not running")
	// ErrClosed is returned by a Browser or Session used after Close.
	ErrClosed = errors.New("browser closed")
	// ErrNoControl is returned by Input when the user has not taken
	// control of the session's browser.
	ErrNoControl = errors.New("the user does not have control of the browser")
)
