package terminal

import "errors"

// ErrNotWebSocket is Serve's error for a request that does not ask to
// upgrade to a WebSocket. Nothing was started; the server answers it
// (426 Upgrade Required fits).
var ErrNotWebSocket = errors.New("terminal: the request is not a WebSocket upgrade")
