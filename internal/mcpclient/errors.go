package mcpclient

import "errors"

// Sentinel errors; each error of the package that is one of these
// wraps it.
var (
	// ErrConfig marks a servers' file, or a server's entry, den cannot
	// use.
	ErrConfig = errors.New("mcp: bad servers file")
	// ErrUnknownServer is a server name no server of the agent has.
	ErrUnknownServer = errors.New("mcp: no such server")
	// ErrNotInstalled is a stdio server whose command is not where it
	// runs (the computer, or the host's PATH).
	ErrNotInstalled = errors.New("mcp: the server's command is not installed")
	// ErrUnavailable is a server den could not start, reach or
	// initialize, or that stopped answering.
	ErrUnavailable = errors.New("mcp: the server is unavailable")
	// ErrNeedsLogin is a server that asks for an OAuth authorization
	// den does not hold (den mcp login).
	ErrNeedsLogin = errors.New("mcp: the server needs an authorization")
)
