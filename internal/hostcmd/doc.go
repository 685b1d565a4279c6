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
// den reads the request within Limits.RequestTimeout. Any malformed
// frame (an unknown type, a length over its limit, a bad request, a
// frame after stdin's end, a frame cut short) ends the connection: den
// logs the error and, when the request itself was bad, tells the
// client on stderr with exit status 1. den judges a frame by its
// header, before reading its payload, and sizes no buffer by a length
// the client claims. A client that disconnects before the exit frame
// cancels the call's context.
//
// # Limits
//
// The computer is not trusted, so what one session's socket can make
// den spend is bounded (Limits, set with WithLimits): at most
// MaxConcurrent calls at once (16; a connection counts from its
// connect until den has sent its exit status, so one that never sends
// its request holds a slot until RequestTimeout), at most
// CallsPerMinute calls a minute (600, in bursts of up to 60), and at
// most MaxBufferedBytes of stdin buffered ahead of the session's
// handlers (4 MiB, 256 KiB a call), past which den stops reading the
// clients' sockets. A call over a limit is refused at once, before
// its handler runs and without its stdin being read: the client prints
// "<command>: den: <why>" and exits 1, and den logs refusals at most
// once a second per session. So a session costs den at most
// MaxConcurrent connections, each with two goroutines, a request (up
// to wire.MaxRequest) and a few KiB of buffers, plus MaxBufferedBytes
// of stdin; what a handler keeps of what it reads is the handler's to
// bound.
//
// # Concurrency
//
// A Listener serves each admitted connection in its own goroutine and
// calls the Handler concurrently. Closing a Listener stops accepting,
// cancels the context of every running call, waits for the handlers to
// return and removes the socket; handlers must return promptly once
// their context is done (their reads and writes of the call's streams
// fail by then).
package hostcmd
