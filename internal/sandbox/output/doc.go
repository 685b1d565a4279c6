// Package output turns the raw bytes a sandboxed command writes to stdout
// and stderr into text that a model or an API client can read, as a stream
// and within a fixed memory bound.
//
// Two writers do the work, usually chained:
//
//	capture := output.NewCapture(limit, openSpillFile)
//	cleaner := output.NewCleaner(capture)
//	cmd.Stdout = cleaner
//	...
//	err := errors.Join(cleaner.Close(), capture.Close())
//	text := capture.Text()
//
// # Cleaner
//
// A [Cleaner] receives chunks cut anywhere — inside an escape sequence, a
// UTF-8 rune, a line or a "\r\n" — and writes the same output whatever the
// cutting. It removes:
//
//   - ANSI/VT escape sequences: CSI (ESC [ ... final byte, private
//     parameters included), OSC (ESC ] ... ended by BEL or ESC \), DCS, SOS,
//     PM and APC strings (ESC P, ESC X, ESC ^, ESC _ ... ended by ESC \),
//     two-byte and charset sequences (ESC 7, ESC ( B, ...), and the 8-bit
//     CSI byte 0x9B when it is not part of valid UTF-8. CAN and SUB abort a
//     sequence; a string that is never terminated hides the rest of the
//     stream, as it would on a terminal.
//   - Control characters other than '\n' and '\t', including backspace and
//     the C1 controls U+0080–U+009F.
//   - Text overwritten by a carriage return: when text follows a lone '\r'
//     on the same line, what came before that '\r' is discarded, so
//     "10%\r50%\r100%\n" becomes "100%\n". "\r\n" is a plain newline, and a
//     '\r' followed by nothing else on its line ("a\r\r\n", a trailing '\r')
//     erases nothing.
//
// It keeps printable text, '\n' and '\t', and writes only valid UTF-8:
// each invalid byte becomes U+FFFD, and a rune is never split between two
// writes to the destination.
//
// Because a carriage return can erase its whole line, the Cleaner holds the
// current line until its '\n' arrives or Close is called. A line longer than
// [MaxLine] bytes is written out as is in pieces of at most MaxLine bytes
// (a later '\r' erases only what is still held). A Cleaner therefore holds
// about MaxLine plus 32 KiB of finished lines, whatever it is given.
//
// # Capture
//
// A [Capture] keeps at most its limit in memory: all of the output while it
// fits, and otherwise its first and last halves (see [Excerpt]), cut on rune
// boundaries and, when a newline is near the cut, on line boundaries. When
// the output first grows past the limit, Capture opens its spill writer once
// and from then on copies every byte to it, so the spill holds the whole
// output byte for byte. A spill failure stops the spill but never the
// in-memory capture; it is reported by [Capture.Err] and [Capture.Close].
//
// # Concurrency
//
// A Cleaner is not safe for concurrent use: it is a stream, and one
// goroutine writes to it. A Capture is safe for concurrent use, so one
// goroutine may read [Capture.Text] or [Capture.Excerpt] while a command is
// still writing.
package output
