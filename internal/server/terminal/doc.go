// Package terminal is the API's terminal: GET
// /api/v1/sessions/{id}/terminal upgrades to a WebSocket that carries
// an interactive login shell on a terminal inside the session's
// computer, as den sh opens one in a person's own terminal.
//
// # Protocol
//
// Binary messages are the terminal's bytes, both ways: what the client
// sends is typed into the shell, what the server sends is what the
// shell wrote. A text message from the client is a control message, a
// JSON object; the one there is resizes the terminal:
//
//	{"type":"resize","cols":120,"rows":40}
//
// with cols and rows in 1..1000 (the terminal starts at 80x24). Any
// other text message closes the socket with status 1008 (policy
// violation), and a message over ReadLimit bytes with 1009 (message too
// big); either way the shell is killed. When the shell ends, the server
// sends what it still wrote, then one text message
//
//	{"type":"exit","code":3}
//
// (code 128+N for a shell killed by signal N) and closes normally
// (1000).
//
// # Lifetime
//
// The shell lives exactly as long as the socket: a client that goes
// away (a close, a reset, a failed write) gets every process of the
// shell's computer session killed, the terminal closed and what the
// process held released before Serve returns; a shell that ends closes
// the socket. Serve owns every goroutine it starts and returns only
// once they have ended.
//
// # Backpressure
//
// Nothing is queued in den: the shell's output is written to the
// socket synchronously, one read of the terminal at a time, so a client
// that reads slowly stops den reading the terminal, and the kernel's
// terminal buffer then stops the shell. Input is read one message at a
// time, each at most ReadLimit bytes, and written to the terminal
// before the next is read.
//
// # Security
//
// The auth guard in front of the API authenticates the request and
// checks the Origin of cookie-authenticated upgrades; websocket.Accept
// checks again that a browser's Origin is the API's own host. The
// shell runs as StartRaw runs it: in the session's computer, with its
// folders and mounts, without host commands.
package terminal
