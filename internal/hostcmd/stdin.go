package hostcmd

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"den.dev/den/internal/hostcmd/wire"
)

// stdinWindow is how much of a call's stdin den buffers ahead of its
// handler (within the session's Limits.MaxBufferedBytes).
const stdinWindow = 256 << 10

// chunkOverhead is what den counts for each buffered stdin frame on top
// of its bytes, so that a stream of tiny frames is bounded too.
const chunkOverhead = 64

// readBufSize is the connection reader's buffer: enough for headers and
// small frames; larger payloads are read past it, straight into their
// own buffer.
const readBufSize = 4 << 10

// frames reads what a client sends. Unlike wire.Reader it returns a
// frame's header before its payload, so that den refuses a frame it
// does not expect without reading it, and it sizes no buffer by a
// length the client merely claims.
type frames struct {
	r   *bufio.Reader
	hdr [wire.HeaderSize]byte
}

func newFrames(r io.Reader) *frames { return &frames{r: bufio.NewReaderSize(r, readBufSize)} }

// header reads a frame's header: io.EOF at a clean end between frames.
func (f *frames) header() (typ byte, n uint32, err error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return 0, 0, err
	}
	return f.hdr[0], binary.BigEndian.Uint32(f.hdr[1:]), nil
}

// payload reads n bytes into a buffer that grows, from wire.MaxData by
// doubling, as they arrive.
func (f *frames) payload(n int) ([]byte, error) {
	p := make([]byte, 0, min(n, wire.MaxData))
	for len(p) < n {
		if len(p) == cap(p) {
			q := make([]byte, len(p), min(n, 2*cap(p)))
			copy(q, p)
			p = q
		}
		m, err := io.ReadFull(f.r, p[len(p):cap(p)])
		p = p[:len(p)+m]
		if err != nil {
			return nil, noEOF(err)
		}
	}
	return p, nil
}

// request reads and parses the request frame that opens a call.
func (f *frames) request() (wire.Request, error) {
	typ, n, err := f.header()
	if err != nil {
		return wire.Request{}, err
	}
	if typ != wire.TypeRequest {
		return wire.Request{}, fmt.Errorf("%w: first frame is %q, not a request", wire.ErrFrame, typ)
	}
	if n > wire.MaxRequest {
		return wire.Request{}, fmt.Errorf("%w: request of %d bytes (at most %d)", wire.ErrFrame, n, wire.MaxRequest)
	}
	p, err := f.payload(int(n))
	if err != nil {
		return wire.Request{}, err
	}
	return wire.ParseRequest(p)
}

// noEOF turns the end of the stream inside a frame into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readStdin moves stdin frames into buf until the client's end of
// file, then waits for the connection to end; any other frame is a
// protocol error. Each frame waits for room in buf before den reads it,
// so a handler that does not keep up stops den reading the socket and,
// through it, the client.
func readStdin(f *frames, buf *stdinBuffer, tty bool) error {
	eof := false
	for {
		typ, n, err := f.header()
		if err != nil {
			if !eof {
				buf.fail(io.ErrUnexpectedEOF)
			}
			return err
		}
		switch {
		case typ == wire.TypeStdin && !eof && !tty && n <= wire.MaxData:
			if n == 0 {
				continue
			}
			if !buf.reserve(int(n)) {
				// The handler is done with stdin; keep reading to see
				// the client leave.
				if _, err := io.CopyN(io.Discard, f.r, int64(n)); err != nil {
					return noEOF(err)
				}
				continue
			}
			p := make([]byte, n)
			if _, err := io.ReadFull(f.r, p); err != nil {
				buf.unreserve(int(n))
				buf.fail(io.ErrUnexpectedEOF)
				return noEOF(err)
			}
			buf.push(p)
		case typ == wire.TypeStdinEOF && !eof && n == 0:
			eof = true
			buf.closeWrite()
		default:
			err := fmt.Errorf("%w: unexpected %q frame of %d bytes from the client", wire.ErrFrame, typ, n)
			buf.fail(err)
			return err
		}
	}
}

// stdinPool is a session's stdin: the budget its calls share, and the
// lock of all their buffers.
type stdinPool struct {
	mu   sync.Mutex
	free int64 // of Limits.MaxBufferedBytes
	bufs map[*stdinBuffer]struct{}
}

func newStdinPool(budget int64) *stdinPool {
	return &stdinPool{free: budget, bufs: make(map[*stdinBuffer]struct{})}
}

// give returns n bytes to the budget and wakes the readers that wait
// for it. p.mu is held.
func (p *stdinPool) give(n int) {
	if n == 0 {
		return
	}
	p.free += int64(n)
	for b := range p.bufs {
		b.room.Broadcast()
	}
}

// stdinBuffer is a bounded pipe from a call's connection reader to its
// handler. Unlike io.Pipe it lets the reader run ahead by a window, so
// that a handler which never reads stdin does not stop den from seeing
// the client leave. It holds the frames as they came; each counts,
// until the handler has read all of it, against the call's window and
// the session's budget.
type stdinBuffer struct {
	pool   *stdinPool
	data   sync.Cond // the handler waits for bytes
	room   sync.Cond // the reader waits for room
	chunks [][]byte
	off    int   // read of chunks[0]
	held   int   // bytes counted: queued, and reserved by the reader
	eof    bool  // the client sent its end of file
	err    error // the stream broke
	closed bool  // the handler is done
}

func (p *stdinPool) newBuffer() *stdinBuffer {
	b := &stdinBuffer{pool: p}
	b.data.L = &p.mu
	b.room.L = &p.mu
	p.mu.Lock()
	p.bufs[b] = struct{}{}
	p.mu.Unlock()
	return b
}

func cost(n int) int { return n + chunkOverhead }

// reserve waits until a frame of n bytes fits the call's window and
// the session's budget, and counts it; false means the handler is done
// with stdin or the stream broke.
func (b *stdinBuffer) reserve(n int) bool {
	c := cost(n)
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	for (b.held+c > stdinWindow || int64(c) > b.pool.free) && !b.closed && b.err == nil {
		b.room.Wait()
	}
	if b.closed || b.err != nil {
		return false
	}
	b.held += c
	b.pool.free -= int64(c)
	return true
}

// unreserve gives back a reservation that brought no frame.
func (b *stdinBuffer) unreserve(n int) {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	if !b.closed {
		b.held -= cost(n)
		b.pool.give(cost(n))
	}
}

// push queues a frame reserved by reserve.
func (b *stdinBuffer) push(p []byte) {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	switch {
	case b.closed: // closeRead gave the reservation back
	case b.err != nil:
		b.held -= cost(len(p))
		b.pool.give(cost(len(p)))
	default:
		b.chunks = append(b.chunks, p)
		b.data.Broadcast()
	}
}

func (b *stdinBuffer) Read(p []byte) (int, error) {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	for len(b.chunks) == 0 && !b.eof && b.err == nil && !b.closed {
		b.data.Wait()
	}
	switch {
	case len(b.chunks) > 0 && !b.closed:
		c := b.chunks[0]
		n := copy(p, c[b.off:])
		b.off += n
		if b.off < len(c) {
			return n, nil
		}
		// A frame counts in full until it is all read: its memory is
		// held until then.
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
		b.off = 0
		if len(b.chunks) == 0 {
			b.chunks = nil
		}
		b.held -= cost(len(c))
		b.pool.give(cost(len(c)))
		return n, nil
	case b.err != nil:
		return 0, b.err
	case b.closed:
		return 0, io.ErrClosedPipe
	}
	return 0, io.EOF
}

func (b *stdinBuffer) closeWrite() {
	b.pool.mu.Lock()
	b.eof = true
	b.data.Broadcast()
	b.pool.mu.Unlock()
}

func (b *stdinBuffer) fail(err error) {
	b.pool.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.data.Broadcast()
	b.room.Broadcast()
	b.pool.mu.Unlock()
}

// closeRead ends the handler's side: what is buffered is dropped and
// given back, and the buffer leaves the pool.
func (b *stdinBuffer) closeRead() {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.chunks, b.off = nil, 0
	delete(b.pool.bufs, b)
	b.pool.give(b.held)
	b.held = 0
	b.data.Broadcast()
	b.room.Broadcast()
}
