// Package hostcmd is the mechanism of den's host commands: programs
// inside an agent's computer (den-open, den-notify, den-model, ...) that
// ask den, on the host, to do what the sandbox cannot do by itself.
//
// # Pieces
//
//   - den-hostcmd (cmd/den-hostcmd) is one small static program, bound
//     read-only at /usr/local/bin/den-hostcmd; every command name is a
//     symbolic link to it, and it dispatches on argv[0]. den embeds it
//     for amd64 and arm64 (ShimPath writes it to the data dir).
//   - A Broker listens on one unix socket per session (Listen), in a
//     folder of its own that is bound into that session's computer at
//     /run/den-host (Binds). The session of a call is the socket it
//     arrives on: nothing the client sends can name another session,
//     and another session's socket is not in the computer at all.
//   - Each call goes to a Handler; a Mux dispatches by command name,
//     resolves aliases (xdg-open → den-open) and answers --help.
//   - Envelope, ParseCommon and Write are the output contract every
//     command shares: a JSON envelope on stdout and the exit codes 0 ok,
//     1 error, 2 invalid arguments, 3 denied, 4 not available.
//
// # Protocol
//
// One call is one connection on a unix stream socket. Every message is
// a frame: one type byte, a big-endian uint32 payload length, the
// payload (see package wire).
//
//	client → den   'R' request   (exactly one, first; ≤ 1 MiB)
//	client → den   '0' stdin     (≤ 64 KiB each, any number)
//	client → den   '.' stdin EOF (exactly one, empty)
//	den → client   '1' stdout, '2' stderr (≤ 64 KiB each)
//	den → client   'X' exit      (exactly one, last: uint32 0..255)
//
// The request payload is "DENH", a version byte (1), a flags byte (bit
// 0: stdin is a terminal, and none is sent), then length-prefixed
// strings: argv (argv[0] included), the working directory inside the
// computer, and the selected environment (TERM, LANG, LANGUAGE, LC_*,
// TZ, COLUMNS, LINES, NO_COLOR, DEN_*), as KEY=VALUE.
//
// Both directions stream at once: den hands stdin to the handler as it
// comes (through a bounded buffer, so a handler that reads slowly slows
// the client down rather than den's memory), and forwards output as the
// handler writes it. den does not wait for stdin's end: a handler that
// never reads stdin finishes, den sends the exit frame and the client
// exits without reading the rest of its input. The client writes stdin
// and reads output in separate goroutines, so neither side can block
// the other into a deadlock.
//
// den reads the request within RequestTimeout. Any malformed frame (an
// unknown type, a length over its limit, a bad request, a frame after
// stdin's end, a frame cut short) ends the connection: den logs the
// error and, when the request itself was bad, tells the client on
// stderr with exit status 1. A client that disconnects before the exit
// frame cancels the call's context.
//
// # Concurrency
//
// A Listener serves each connection in its own goroutine and calls the
// Handler concurrently. Closing a Listener stops accepting, cancels the
// context of every running call, waits for the handlers to return and
// removes the socket; handlers must return promptly once their context
// is done (their reads and writes of the call's streams fail by then).
package hostcmd
