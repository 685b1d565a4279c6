// Package browserview is the API's window on a session's web browser:
// GET /api/v1/sessions/{id}/browser says whether the session has one
// now and lists its tabs, and GET /api/v1/sessions/{id}/browser/screencast
// upgrades to a WebSocket that streams the session's current tab and
// lets the user take it over.
//
// # Protocol
//
// The server sends text messages, each a JSON object, and binary ones:
//
//	{"type":"control","control":true,"yours":true}
//	{"type":"frame","width":1280,"height":800,"scroll_x":0,"scroll_y":120,"tab":1,"url":"...","title":"..."}
//	(binary: the frame's JPEG)
//	{"type":"error","code":"no_control","message":"..."}
//	{"type":"end","reason":"The browser closed."}
//
// control comes first, then whenever it changes: whether the user
// controls the browser, and whether through this socket (yours). A
// frame is two messages, its metadata and then its picture, so that
// the picture travels as bytes (no base64) and the metadata stays
// readable; nothing else comes between them. width and height are the
// viewport's in CSS pixels, whatever the picture's size: input
// coordinates are the viewport's. A frame whose page changed its title
// or address without painting is sent again with them. end comes once,
// when the browser goes (closed, its tab gone, the session stopped, or
// none to start with); the socket then closes normally.
//
// The client sends text messages:
//
//	{"type":"take"}
//	{"type":"release"}
//	{"type":"input","kind":"down","x":120,"y":48,"button":"left"}
//
// input carries browser.InputEvent's fields (kind move, down, up,
// wheel, keydown, keyup or text). It is refused with an error message
// (no_control) unless this socket took control and holds it; a bad
// event is refused with bad_input, one the page did not take with
// input_failed. Messages past InputRate a second (after a burst of
// InputBurst) are dropped, and the client is told (rate_limited) at
// most once a second. A message that is not a JSON object, or has
// another type, closes the socket with 1008 (policy violation); one over
// ReadLimit bytes with 1009 (message too big).
//
// # Control
//
// Control belongs to one socket: the last that took it. It goes back
// to the agent when that socket sends release or closes, however it
// closes: a client that goes away, a write that does not finish within
// WriteWait, a ping not answered within PingWait of being sent (every
// PingEvery). So a phone that went to sleep holding the browser keeps
// the agent waiting for at most about half a minute (and never longer
// than the browser's own Options.TakeoverWait).
//
// # Backpressure
//
// Frames are not queued: the newest replaces one not yet sent, so a
// slow client gets fewer frames, never more of den's memory; and at
// most MaxFPS are sent a second. Chromium sends the next frame only
// once den has taken the last. Input is read one message at a time and
// given to the page before the next is read.
//
// # Lifetime
//
// Chromium streams a tab to one screencast at a time, so the sockets
// that watch a browser share its screencast: the first starts it, a
// socket that joins gets its newest frame at once, and the last to
// leave stops it and waits for it to end. Serve returns once the
// goroutines it started have ended and control, if its socket held it,
// is given back.
//
// # Security
//
// As for the terminal: the auth guard in front of the API
// authenticates the request and checks the Origin of cookie-
// authenticated upgrades, and websocket.Accept checks again that a
// browser's Origin is the API's own host. The page's own text (its
// title and address) goes to the client as data, never as markup.
package browserview
