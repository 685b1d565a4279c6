package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// lineWindow is how far, in bytes, a Capture looks from a cut for a newline
// to cut at instead. It is at most a quarter of the head or tail.
const lineWindow = 256

// Capture is an io.WriteCloser that keeps at most a fixed number of bytes of
// what is written to it: all of it while it fits, otherwise its head and
// tail, and copies the whole output to a spill writer once it does not fit.
//
// Write never fails because of the spill: a spill error is kept, reported by
// Err and Close, and only stops the spill.
//
// A Capture is safe for concurrent use.
type Capture struct {
	mu    sync.Mutex
	limit int
	spill func() (io.WriteCloser, error)

	// Until the output exceeds the limit, buf holds all of it. After, it
	// holds the head in buf[:head] and the tail in a ring,
	// buf[limit/2:limit], whose oldest byte is at pos; before is the byte
	// that came just before the oldest.
	buf       []byte
	total     int64
	truncated bool
	head      int
	pos       int
	before    byte

	w      io.WriteCloser // the open spill, if any
	err    error          // the first spill error
	closed bool
}

// NewCapture returns a Capture that keeps at most limit bytes in memory.
// When the output first grows past limit, it calls spill once, if spill is
// not nil, and writes the whole output to the writer it returns. spill runs
// inside that Write, with the Capture locked, so it must not call the
// Capture's methods. NewCapture panics if limit is negative.
func NewCapture(limit int, spill func() (io.WriteCloser, error)) *Capture {
	if limit < 0 {
		panic(fmt.Sprintf("output: negative capture limit %d", limit))
	}
	return &Capture{limit: limit, spill: spill}
}

// Write records p. It returns len(p) and no error, unless the Capture is
// closed, in which case it returns ErrClosed.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	c.total += int64(len(p))
	switch {
	case c.truncated:
		c.spillWrite(p)
		c.ring(p)
	case len(c.buf)+len(p) <= c.limit:
		c.grow(len(p))
		c.buf = append(c.buf, p...)
	default:
		c.truncate(p)
	}
	return len(p), nil
}

// grow makes room for n more bytes in buf without going past the limit.
func (c *Capture) grow(n int) {
	need := len(c.buf) + n
	if need <= cap(c.buf) {
		return
	}
	size := min(max(2*cap(c.buf), need, 512), c.limit)
	b := make([]byte, len(c.buf), size)
	copy(b, c.buf)
	c.buf = b
}

// truncate handles the write that takes the output past the limit: it opens
// the spill and writes everything so far to it, fixes the head and turns the
// rest of buf into the tail's ring.
func (c *Capture) truncate(p []byte) {
	fill := c.limit - len(c.buf)
	c.grow(fill)
	c.buf = append(c.buf, p[:fill]...)
	rest := p[fill:]
	c.truncated = true

	if c.spill != nil {
		w, err := c.spill()
		if err == nil && w == nil {
			err = errNoSpill
		}
		if err != nil {
			c.err = fmt.Errorf("output: open spill: %w", err)
		} else {
			c.w = w
			c.spillWrite(c.buf)
			c.spillWrite(rest)
		}
	}

	half := c.limit / 2
	c.head = cutHead(c.buf, half)
	c.before = '\n' // the start of the output is a line start
	if half > 0 {
		c.before = c.buf[half-1]
	}
	c.pos = 0
	c.ring(rest)
}

// ring writes p to the tail's ring, which is full.
func (c *Capture) ring(p []byte) {
	r := c.buf[c.limit/2 : c.limit]
	n := len(r)
	switch {
	case n == 0:
	case len(p) > n:
		c.before = p[len(p)-n-1]
		copy(r, p[len(p)-n:])
		c.pos = 0
	case len(p) > 0:
		c.before = r[(c.pos+len(p)-1)%n]
		k := copy(r[c.pos:], p)
		copy(r, p[k:])
		c.pos = (c.pos + len(p)) % n
	}
}

func (c *Capture) spillWrite(p []byte) {
	if c.w == nil || c.err != nil || len(p) == 0 {
		return
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.err = fmt.Errorf("output: write spill: %w", err)
	}
}

// Close closes the spill writer, if one was opened, and returns the first
// spill error: opening, writing or closing it. Closing twice is harmless.
// The kept text stays readable after Close.
func (c *Capture) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.err
	}
	c.closed = true
	if c.w != nil {
		if err := c.w.Close(); err != nil && c.err == nil {
			c.err = fmt.Errorf("output: close spill: %w", err)
		}
	}
	return c.err
}

// Err returns the first spill error so far, or nil. After a spill error the
// spill writer holds only a prefix of the output.
func (c *Capture) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Total returns the number of bytes written so far.
func (c *Capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Truncated reports whether the output has grown past the limit, so that
// only its head and tail are kept.
func (c *Capture) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}

// Text returns the kept output as one string: c.Excerpt().Text().
func (c *Capture) Text() string {
	return c.Excerpt().Text()
}

// Excerpt returns a copy of what the Capture keeps of the output so far.
func (c *Capture) Excerpt() Excerpt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.truncated {
		return Excerpt{Head: string(c.buf), Total: c.total}
	}
	r := c.buf[c.limit/2 : c.limit]
	tail := make([]byte, 0, len(r))
	tail = append(tail, r[c.pos:]...)
	tail = append(tail, r[:c.pos]...)
	tail = tail[cutTail(tail, c.before):]
	return Excerpt{
		Head:    string(c.buf[:c.head]),
		Tail:    string(tail),
		Omitted: c.total - int64(c.head) - int64(len(tail)),
		Total:   c.total,
	}
}

// Excerpt is what a Capture kept of an output: the whole output in Head, or,
// when the output was larger than the limit, at most limit/2 bytes from its
// start in Head and at most the rest of the limit from its end in Tail.
//
// Head ends, and Tail starts, at a rune boundary of valid UTF-8 input, and
// at a line boundary when a newline lies close to the cut (within 256 bytes
// and a quarter of the half). Head+Tail may be shorter than the limit by
// the bytes moved to the omitted middle for that.
type Excerpt struct {
	Head    string // the start of the output, or all of it
	Tail    string // the end of the output; empty unless truncated
	Omitted int64  // the number of bytes between Head and Tail
	Total   int64  // the number of bytes of the whole output
}

// Truncated reports whether part of the output was omitted.
func (e Excerpt) Truncated() bool {
	return e.Omitted > 0
}

// Text returns Head and Tail joined by a line such as
// "[... 123456 bytes omitted ...]" when part of the output was omitted, and
// Head alone otherwise.
func (e Excerpt) Text() string {
	if !e.Truncated() {
		return e.Head + e.Tail
	}
	var b strings.Builder
	b.Grow(len(e.Head) + len(e.Tail) + 40)
	b.WriteString(e.Head)
	if e.Head != "" && !strings.HasSuffix(e.Head, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes omitted ...]\n", e.Omitted)
	b.WriteString(e.Tail)
	return b.String()
}

// cutHead returns where to end a head of at most n bytes of b, where
// len(b) > n: after a newline close to n, or else before a rune that n
// would cut.
func cutHead(b []byte, n int) int {
	w := min(lineWindow, n/4)
	if i := bytes.LastIndexByte(b[n-w:n], '\n'); i >= 0 {
		return n - w + i + 1
	}
	for k := 1; k < utf8.UTFMax && k <= n; k++ {
		if utf8.RuneStart(b[n-k]) {
			if !utf8.FullRune(b[n-k : n]) { // a valid rune start, cut short
				return n - k
			}
			break
		}
	}
	return n
}

// cutTail returns where to start a tail cut from the end of the output:
// after a newline close to its start, unless before, the byte preceding
// it, already ends a line; or else after the continuation bytes of a rune
// that the cut split.
func cutTail(b []byte, before byte) int {
	if before == '\n' {
		return 0
	}
	w := min(lineWindow, len(b)/4)
	if i := bytes.IndexByte(b[:w], '\n'); i >= 0 {
		return i + 1
	}
	if before < utf8.RuneSelf {
		return 0 // no rune was split
	}
	i := 0
	for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}
