package hostcmd

import "errors"

// Errors.
var (
	// ErrClosed is returned by Listen on a closed Broker.
	ErrClosed = errors.New("hostcmd: closed")
	// ErrDirNotEmpty means the socket folder holds something other than
	// the socket: it is bound into the computer, so it must hold nothing
	// else.
	ErrDirNotEmpty = errors.New("hostcmd: socket folder not empty")
	// ErrNoShim means den carries no den-hostcmd for this architecture.
	ErrNoShim = errors.New("hostcmd: no den-hostcmd for this architecture")
	// ErrLink means a command's link could not be made in the rootfs.
	ErrLink = errors.New("hostcmd: link")
)
