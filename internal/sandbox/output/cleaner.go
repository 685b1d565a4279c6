package output

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxLine is the longest unterminated line, in bytes, that a Cleaner holds
// back waiting for its newline. Beyond it the line is written out as is.
const MaxLine = 64 << 10

// flushSize is how many bytes of finished lines a Cleaner gathers before it
// writes them to its destination in the middle of a Write.
const flushSize = 32 << 10

// Bytes with a meaning to the escape parser.
const (
	esc   = 0x1b
	bel   = 0x07
	can   = 0x18
	sub   = 0x1a
	c1CSI = 0x9b
)

// replacement is U+FFFD, written in place of each invalid byte.
const replacement = "\uFFFD"

// state is where the escape parser is between two bytes.
type state uint8

const (
	ground      state = iota // text
	escape                   // after ESC
	escapeInter              // after ESC and intermediate bytes, as in ESC ( B
	csi                      // after ESC [ or 0x9B, until a final byte
	osc                      // an OSC string, ended by BEL or ST
	str                      // a DCS, SOS, PM or APC string, ended by ST
	strEscape                // ESC inside a string: '\' makes it ST
)

// Cleaner is an io.WriteCloser that removes terminal escape sequences,
// control characters and text overwritten by carriage returns from what is
// written to it, and writes valid UTF-8 to its destination. See the package
// documentation for the exact contract.
//
// A Cleaner is not safe for concurrent use.
type Cleaner struct {
	dst   io.Writer
	state state
	cr    bool // a '\r' came after the last text of the current line

	// carry holds the start of a rune cut by the end of a Write.
	carry  [utf8.UTFMax]byte
	ncarry int

	// buf holds finished output in buf[:line] and the current line after it.
	buf  []byte
	line int

	err    error // the first destination error; sticky
	closed bool
}

// NewCleaner returns a Cleaner that writes to dst.
func NewCleaner(dst io.Writer) *Cleaner {
	return &Cleaner{dst: dst}
}

// Write cleans p and writes all finished lines to the destination; the
// current line is held until its newline, Close, or MaxLine bytes. Each
// write to the destination is valid UTF-8 and, except for the pieces of a
// line longer than MaxLine and the last line written by Close, ends with a
// newline, so two Cleaners sharing a destination interleave whole lines.
// Write
// returns len(p) unless the destination failed, in which case it returns 0
// and the destination's error, and so does every later Write.
func (c *Cleaner) Write(p []byte) (int, error) {
	if c.closed {
		return 0, ErrClosed
	}
	if c.err != nil {
		return 0, c.err
	}
	n := len(p)
	// Complete a carried rune from the first bytes of p. Feeding a few bytes
	// at a time keeps the copy small; the carry may be set again if p is
	// shorter than the rest of the rune.
	for c.ncarry > 0 && len(p) > 0 && c.err == nil {
		var tmp [2 * utf8.UTFMax]byte
		k := min(len(p), utf8.UTFMax-1)
		t := append(append(tmp[:0], c.carry[:c.ncarry]...), p[:k]...)
		c.ncarry = 0
		c.feed(t)
		p = p[k:]
	}
	if len(p) > 0 && c.err == nil {
		c.feed(p)
	}
	c.flush()
	if c.err != nil {
		return 0, c.err
	}
	return n, nil
}

// Close writes what the Cleaner still holds: an incomplete rune becomes
// U+FFFD, an unfinished escape sequence is dropped, and the current line is
// written without a newline being added. Close does not close the
// destination. Close returns the destination's error, if any; closing twice
// is harmless.
func (c *Cleaner) Close() error {
	if c.closed {
		return c.err
	}
	c.closed = true
	if c.err != nil {
		return c.err
	}
	if c.ncarry > 0 {
		// The carry is a valid but incomplete rune: its first byte is
		// invalid, and the rest are fed again as the bytes they are.
		var tmp [utf8.UTFMax]byte
		rest := append(tmp[:0], c.carry[1:c.ncarry]...)
		c.ncarry = 0
		c.textRune([]byte(replacement))
		c.feed(rest)
	}
	c.line = len(c.buf)
	c.flush()
	return c.err
}

// feed runs p through the parser. It returns early on a destination error,
// or when p ends inside a rune, which it then keeps in carry.
//
// feed is long because it is one state machine: each case handles one state
// and the cases share the loop, which runs once per byte or run of text.
func (c *Cleaner) feed(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		switch c.state {
		case ground:
			if b >= 0x20 && b < 0x7f {
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
					j++
				}
				c.text(p[i:j])
				if c.err != nil {
					return
				}
				i = j
				break
			}
			switch {
			case b == '\n':
				c.newline()
				i++
			case b == '\r':
				c.cr = true
				i++
			case b == '\t':
				c.text(p[i : i+1])
				i++
			case b == esc:
				c.state = escape
				i++
			case b < utf8.RuneSelf: // other C0 controls and DEL
				i++
			case !utf8.FullRune(p[i:]):
				c.ncarry = copy(c.carry[:], p[i:])
				return
			default:
				r, size := utf8.DecodeRune(p[i:])
				switch {
				case r == utf8.RuneError && size == 1 && b == c1CSI:
					c.state = csi
				case r == utf8.RuneError && size == 1:
					c.textRune([]byte(replacement))
				case r < 0xa0: // C1 controls, U+0080–U+009F
				default:
					c.textRune(p[i : i+size])
				}
				i += size
			}
			if c.err != nil {
				return
			}

		case escape:
			i++
			switch {
			case b == '[':
				c.state = csi
			case b == ']':
				c.state = osc
			case b == 'P' || b == 'X' || b == '^' || b == '_':
				c.state = str
			case b >= 0x20 && b <= 0x2f:
				c.state = escapeInter
			case b >= 0x30 && b <= 0x7e:
				c.state = ground
			case b == esc:
			case b == can || b == sub:
				c.state = ground
			default: // other controls, DEL, non-ASCII: not part of it
				c.state = ground
				i--
			}

		case escapeInter:
			i++
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b >= 0x30 && b <= 0x7e, b == can, b == sub:
				c.state = ground
			case b == esc:
				c.state = escape
			default:
				c.state = ground
				i--
			}

		case csi:
			i++
			switch {
			case b >= 0x20 && b <= 0x3f, b == 0x7f: // parameters, intermediates
			case b >= 0x40 && b <= 0x7e, b == can, b == sub:
				c.state = ground
			case b == esc:
				c.state = escape
			default:
				c.state = ground
				i--
			}

		case osc, str:
			j := i
			for j < len(p) {
				b := p[j]
				if b == esc || b == can || b == sub || b == bel && c.state == osc {
					break
				}
				j++
			}
			if j == len(p) {
				return
			}
			if p[j] == esc {
				c.state = strEscape
			} else {
				c.state = ground
			}
			i = j + 1

		case strEscape:
			if b == '\\' {
				c.state = ground
				i++
			} else {
				// ESC ended the string and starts a new sequence.
				c.state = escape
			}
		}
	}
}

// text appends printable ASCII to the current line, first erasing the line
// if a carriage return came before, and ends the line early at MaxLine.
func (c *Cleaner) text(b []byte) {
	if c.cr {
		c.buf = c.buf[:c.line]
		c.cr = false
	}
	for {
		room := MaxLine - (len(c.buf) - c.line)
		if len(b) <= room {
			c.buf = append(c.buf, b...)
			return
		}
		c.buf = append(c.buf, b[:room]...)
		b = b[room:]
		c.endLine()
		if c.err != nil {
			return
		}
	}
}

// textRune is text for one multi-byte rune, which is never cut.
func (c *Cleaner) textRune(r []byte) {
	if c.cr {
		c.buf = c.buf[:c.line]
		c.cr = false
	}
	if len(c.buf)-c.line+len(r) > MaxLine {
		c.endLine()
	}
	c.buf = append(c.buf, r...)
}

func (c *Cleaner) newline() {
	c.buf = append(c.buf, '\n')
	c.cr = false
	c.endLine()
}

// endLine makes the current line final and flushes once enough is final.
func (c *Cleaner) endLine() {
	c.line = len(c.buf)
	if c.line >= flushSize {
		c.flush()
	}
}

// flush writes the finished output and moves the current line to the front.
func (c *Cleaner) flush() {
	if c.line == 0 || c.err != nil {
		return
	}
	if _, err := c.dst.Write(c.buf[:c.line]); err != nil {
		c.err = fmt.Errorf("output: write: %w", err)
		return
	}
	n := copy(c.buf, c.buf[c.line:])
	c.buf = c.buf[:n]
	c.line = 0
}
