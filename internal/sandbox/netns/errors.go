package netns

import "errors"

// ErrUnavailable means user-mode networking cannot work on this host:
// slirp4netns is missing, too old or cannot open /dev/net/tun. The
// wrapping error says which, and what to install or change.
var ErrUnavailable = errors.New("user-mode networking unavailable")
