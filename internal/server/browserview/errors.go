package browserview

import "errors"

// ErrNotWebSocket is Serve's error for a request that does not ask to
// upgrade to a WebSocket; the server answers it (426 Upgrade Required).
var ErrNotWebSocket = errors.New("browserview: the request is not a WebSocket upgrade")
