package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// After an upgrade, a connection to a bound host carries no more HTTP
// that den could mask. den lets through only the upgrade it can read,
// WebSocket (RFC 6455) without extensions, and masks the values in
// every frame the server sends: the frames' payloads pass through a
// tail per message, so a value split between a message's fragments is
// masked too, and the frames go on with their lengths rewritten for the
// bytes the tail moves from one fragment to the next (a message's
// fragmentation means nothing, and RFC 6455 5.4 lets an intermediary
// change it). Memory stays bounded whatever a frame's length: den never
// holds more than a read and a tail. The client's frames go to the
// server as they are: the value goes only into the handshake's slot,
// never in place of a placeholder in a frame.

// refusal is why den will not relay a request or a response: an error
// whose text is den's answer to the computer.
type refusal string

func (r refusal) Error() string { return string(r) }

// upgrading reports whether h asks for an upgrade (an Upgrade header
// without "Connection: upgrade" goes no further than den).
func upgrading(h http.Header) bool { return hasToken(h.Values("Connection"), "upgrade") }

// webSocket reports whether h asks for an upgrade to WebSocket alone.
func webSocket(h http.Header) bool {
	ups := h.Values("Upgrade")
	return upgrading(h) && len(ups) == 1 && strings.EqualFold(strings.TrimSpace(ups[0]), "websocket")
}

// refuseUpgrade is why den will not relay r to a bound host, or "".
func refuseUpgrade(r *http.Request) refusal {
	if !upgrading(r.Header) || webSocket(r.Header) {
		return ""
	}
	return refusal(fmt.Sprintf("den: refused the upgrade to %q: towards a host with secrets den lets through only WebSocket, whose frames it can read and mask, not a protocol it cannot see into.",
		strings.Join(r.Header.Values("Upgrade"), ", ")))
}

// maskUpgrade checks a 101 answer to a WebSocket request and makes its
// body, the connection, mask the values in what the server sends.
func maskUpgrade(r *http.Response, vals [][]byte) error {
	if r.Request == nil || !webSocket(r.Request.Header) {
		return refusal("den: the server switched protocols unasked; den closed the connection.")
	}
	if up := r.Header.Get("Upgrade"); !strings.EqualFold(up, "websocket") {
		return refusal(fmt.Sprintf("den: the server switched to %q instead of WebSocket; den closed the connection.", up))
	}
	if ext := r.Header.Values("Sec-WebSocket-Extensions"); len(ext) > 0 {
		return refusal(fmt.Sprintf("den: the server answered with the WebSocket extension %q, which den did not offer and whose frames it cannot mask (a compressed value cannot be found); den closed the connection.",
			strings.Join(ext, ", ")))
	}
	up, ok := r.Body.(io.ReadWriteCloser)
	if !ok {
		return fmt.Errorf("upgrade: the connection is not writable (%T)", r.Body)
	}
	r.Body = newWSMasker(up, vals)
	return nil
}

// hasToken reports whether a comma-separated header holds tok.
func hasToken(vals []string, tok string) bool {
	for _, v := range vals {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), tok) {
				return true
			}
		}
	}
	return false
}

// WebSocket opcodes (RFC 6455 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// closePolicy is the close code den sends when it ends a WebSocket
// (1008, policy violation).
const closePolicy = 1008

// wsMasker is a WebSocket's connection to the server, after the
// handshake: Write sends the client's bytes as they are; Read gives the
// server's frames with the values masked. A frame den cannot mask (a
// compressed one, one of an extension, a masked one) or does not
// understand ends the relay: Read gives a close frame that says why,
// then an error, without the frame. Read and Write may be called
// concurrently with each other; Close with either.
type wsMasker struct {
	up io.ReadWriteCloser
	r  *bufio.Reader

	t      tail   // the current message's bytes held back
	inMsg  bool   // a message has begun and not ended
	left   uint64 // payload bytes of the current data frame still to read
	fin    bool   // the current data frame ends its message
	closed bool   // a close frame went to the client
	chunk  []byte // a read of payload
	buf    []byte // out's storage
	out    []byte // ready for the client
	err    error
}

func newWSMasker(up io.ReadWriteCloser, vals [][]byte) *wsMasker {
	return &wsMasker{up: up, r: bufio.NewReaderSize(up, 32<<10), t: newTail(vals), chunk: make([]byte, 32<<10)}
}

func (m *wsMasker) Write(p []byte) (int, error) { return m.up.Write(p) }

func (m *wsMasker) Close() error { return m.up.Close() }

func (m *wsMasker) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		if err := m.step(); err != nil {
			m.err = err
			var why refusal
			if errors.As(err, &why) && !m.closed {
				// Between two frames: the client can read a last one.
				m.out = closeFrame(m.out, closePolicy, string(why))
				m.closed = true
			}
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

// step reads one frame's header or a piece of its payload, and adds
// what the client may have to m.out.
func (m *wsMasker) step() error {
	m.out = m.buf[:0]
	defer func() { m.buf = m.out[:0] }()
	if m.left > 0 {
		n, err := m.r.Read(m.chunk[:min(m.left, uint64(len(m.chunk)))])
		m.left -= uint64(n)
		m.out = append(m.out, m.t.push(m.chunk[:n])...)
		if m.left == 0 {
			m.endFrame()
			return nil
		}
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	fin, op, n, err := m.header()
	if err != nil {
		return err
	}
	switch op {
	case opClose, opPing, opPong:
		if !fin || n > 125 {
			return refusal("den: the server sent a malformed control frame")
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(m.r, payload); err != nil {
			return unexpected(err)
		}
		// The whole payload, a close frame's code with its reason: a
		// value that began in the code is masked too.
		m.out = appendFrame(m.out, true, op, maskBytes(payload, m.t.vals))
		m.closed = m.closed || op == opClose
		return nil
	case opText, opBinary:
		if m.inMsg {
			return refusal("den: the server began a message inside another")
		}
		m.inMsg = true
	case opContinuation:
		if !m.inMsg {
			return refusal("den: the server continued a message it had not begun")
		}
	default:
		return refusal(fmt.Sprintf("den: the server sent a frame of unknown opcode %#x, which den cannot mask", op))
	}
	// The frame carries what the tail held back from the message's
	// earlier fragments, and holds back the end of its own unless it
	// ends the message.
	total := uint64(m.t.held()) + n
	if total>>63 != 0 {
		return refusal("den: the server sent a frame too long")
	}
	length := total
	if !fin {
		length -= min(uint64(m.t.keep), total)
	}
	m.out = appendHeader(m.out, fin, op, length)
	m.left, m.fin = n, fin
	if n == 0 {
		m.endFrame()
	}
	return nil
}

// endFrame ends the current data frame, and with it, if it was the
// last, the message and its tail.
func (m *wsMasker) endFrame() {
	if m.fin {
		m.out = append(m.out, m.t.flush()...)
		m.inMsg = false
	}
}

// header reads a frame's header: io.EOF when the server ended the
// connection between frames.
func (m *wsMasker) header() (fin bool, op byte, n uint64, err error) {
	var h [8]byte
	if _, err := io.ReadFull(m.r, h[:2]); err != nil {
		return false, 0, 0, err
	}
	fin, op, n = h[0]&0x80 != 0, h[0]&0x0f, uint64(h[1]&0x7f)
	if h[0]&0x70 != 0 {
		return false, 0, 0, refusal("den: the server sent a compressed or extended frame, which den cannot mask")
	}
	if h[1]&0x80 != 0 {
		return false, 0, 0, refusal("den: the server sent a masked frame")
	}
	switch n {
	case 126:
		if _, err := io.ReadFull(m.r, h[:2]); err != nil {
			return false, 0, 0, unexpected(err)
		}
		n = uint64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(m.r, h[:8]); err != nil {
			return false, 0, 0, unexpected(err)
		}
		n = binary.BigEndian.Uint64(h[:8])
	}
	return fin, op, n, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendHeader appends an unmasked frame's header, its length in as few
// bytes as RFC 6455 5.2 requires.
func appendHeader(b []byte, fin bool, op byte, n uint64) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	switch {
	case n <= 125:
		return append(b, b0, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b0, 126), uint16(n))
	}
	return binary.BigEndian.AppendUint64(append(b, b0, 127), n)
}

func appendFrame(b []byte, fin bool, op byte, payload []byte) []byte {
	return append(appendHeader(b, fin, op, uint64(len(payload))), payload...)
}

// closeFrame appends a close frame with code and as much of reason as
// fits (123 bytes, cut at a character's start).
func closeFrame(b []byte, code uint16, reason string) []byte {
	for len(reason) > 123 || !utf8.ValidString(reason) {
		reason = reason[:len(reason)-1]
	}
	payload := binary.BigEndian.AppendUint16(nil, code)
	return appendFrame(b, true, opClose, append(payload, reason...))
}
