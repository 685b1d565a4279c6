// Package wire is the frame format of host commands, shared by den and
// by den-hostcmd, the program inside the computer. It uses the standard
// library only, so that den-hostcmd stays small and static. See the
// hostcmd package's documentation for the protocol.
package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Frame types. Client (den-hostcmd) to den: one Request, then Stdin
// frames and one StdinEOF. Den to client: Stdout and Stderr frames,
// then one Exit.
const (
	TypeRequest  byte = 'R'
	TypeStdin    byte = '0'
	TypeStdinEOF byte = '.'
	TypeStdout   byte = '1'
	TypeStderr   byte = '2'
	TypeExit     byte = 'X'
)

// Limits on frames and requests.
const (
	HeaderSize = 5        // type byte + big-endian uint32 payload length
	MaxData    = 64 << 10 // payload of a Stdin, Stdout or Stderr frame
	MaxRequest = 1 << 20  // payload of a Request frame
	MaxArgs    = 4096
	MaxEnv     = 256
	Version    = 1
)

// Magic opens every request payload.
var Magic = [4]byte{'D', 'E', 'N', 'H'}

// ErrFrame is wrapped by every error about a malformed frame.
var ErrFrame = errors.New("hostcmd: malformed frame")

// maxPayload is the largest payload a frame of type t may carry; -1
// means t is not a frame type.
func maxPayload(t byte) int {
	switch t {
	case TypeRequest:
		return MaxRequest
	case TypeStdin, TypeStdout, TypeStderr:
		return MaxData
	case TypeStdinEOF:
		return 0
	case TypeExit:
		return 4
	}
	return -1
}

// Reader reads frames. Payloads are read into a buffer the Reader
// reuses: a payload is valid until the next call to Next.
type Reader struct {
	r   io.Reader
	hdr [HeaderSize]byte
	buf []byte
}

// NewReader returns a Reader of r; r should be buffered by the caller
// when it is a socket.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next reads one frame. It returns io.EOF only at a clean end between
// frames; a frame cut short is io.ErrUnexpectedEOF, and an unknown type
// or an oversized length is ErrFrame, read no further. Memory is
// bounded by MaxRequest.
func (r *Reader) Next() (typ byte, payload []byte, err error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return 0, nil, err
	}
	typ = r.hdr[0]
	n := binary.BigEndian.Uint32(r.hdr[1:])
	limit := maxPayload(typ)
	if limit < 0 {
		return 0, nil, fmt.Errorf("%w: unknown type 0x%02x", ErrFrame, typ)
	}
	if n > uint32(limit) {
		return 0, nil, fmt.Errorf("%w: type %q carries %d bytes (at most %d)", ErrFrame, typ, n, limit)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	p := r.buf[:n]
	if _, err := io.ReadFull(r.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return typ, p, nil
}

// AppendFrame appends a frame to b. The payload must respect the
// type's limit.
func AppendFrame(b []byte, typ byte, payload []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// Header returns the header of a frame of typ carrying n bytes.
func Header(typ byte, n int) [HeaderSize]byte {
	var h [HeaderSize]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(n))
	return h
}

// WriteFrame writes one frame, splitting nothing: payload must respect
// the type's limit.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > maxPayload(typ) {
		return fmt.Errorf("%w: type %q payload of %d bytes", ErrFrame, typ, len(payload))
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, HeaderSize+len(payload)), typ, payload))
	return err
}

// Exit payloads carry a status from 0 to 255.
func ExitPayload(code int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(code))
}

// ParseExit reads an Exit payload.
func ParseExit(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("%w: exit payload of %d bytes", ErrFrame, len(p))
	}
	n := binary.BigEndian.Uint32(p)
	if n > 255 {
		return 0, fmt.Errorf("%w: exit status %d", ErrFrame, n)
	}
	return int(n), nil
}

// Request is what a client sends first.
type Request struct {
	Args     []string // argv, argv[0] included
	Cwd      string
	Env      []string // KEY=VALUE
	StdinTTY bool     // the client's stdin is a terminal: it sends no stdin
}

const flagStdinTTY = 1

// AppendRequest encodes req:
//
//	"DENH" version:u8 flags:u8 argc:u32 {len:u32 bytes}*argc
//	cwdlen:u32 cwd envc:u32 {len:u32 bytes}*envc
func AppendRequest(b []byte, req Request) []byte {
	b = append(b, Magic[:]...)
	var flags byte
	if req.StdinTTY {
		flags |= flagStdinTTY
	}
	b = append(b, Version, flags)
	b = appendStrings(b, req.Args)
	b = appendString(b, req.Cwd)
	return appendStrings(b, req.Env)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// ParseRequest decodes a request payload. It refuses a wrong magic or
// version, counts above MaxArgs or MaxEnv, strings with NUL bytes,
// environment entries without '=', an empty argv and trailing bytes.
func ParseRequest(p []byte) (Request, error) {
	var req Request
	if len(p) < 6 || !bytes.Equal(p[:4], Magic[:]) {
		return req, fmt.Errorf("%w: not a host command request", ErrFrame)
	}
	if p[4] != Version {
		return req, fmt.Errorf("%w: protocol version %d (den speaks %d)", ErrFrame, p[4], Version)
	}
	if p[5]&^flagStdinTTY != 0 {
		return req, fmt.Errorf("%w: unknown flags 0x%02x", ErrFrame, p[5])
	}
	req.StdinTTY = p[5]&flagStdinTTY != 0
	d := decoder{p: p[6:]}
	req.Args = d.strings(MaxArgs, "argv")
	req.Cwd = d.string("cwd")
	req.Env = d.strings(MaxEnv, "env")
	if d.err == nil && len(d.p) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrFrame, len(d.p))
	}
	if d.err == nil && len(req.Args) == 0 {
		d.err = fmt.Errorf("%w: empty argv", ErrFrame)
	}
	for _, e := range req.Env {
		if d.err == nil && (len(e) == 0 || e[0] == '=' || strings.IndexByte(e, '=') < 0) {
			d.err = fmt.Errorf("%w: environment entry %q", ErrFrame, e)
		}
	}
	if d.err != nil {
		return Request{}, d.err
	}
	return req, nil
}

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) u32(what string) uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.p) < 4 {
		d.err = fmt.Errorf("%w: %s cut short", ErrFrame, what)
		return 0
	}
	n := binary.BigEndian.Uint32(d.p)
	d.p = d.p[4:]
	return n
}

func (d *decoder) string(what string) string {
	n := d.u32(what)
	if d.err != nil {
		return ""
	}
	if uint64(n) > uint64(len(d.p)) {
		d.err = fmt.Errorf("%w: %s of %d bytes, %d left", ErrFrame, what, n, len(d.p))
		return ""
	}
	s := d.p[:n]
	d.p = d.p[n:]
	if bytes.IndexByte(s, 0) >= 0 {
		d.err = fmt.Errorf("%w: NUL byte in %s", ErrFrame, what)
		return ""
	}
	return string(s)
}

func (d *decoder) strings(limit int, what string) []string {
	n := d.u32(what + " count")
	if d.err != nil {
		return nil
	}
	// Each string takes at least 4 bytes, so a count larger than that
	// cannot be honest; checking first keeps allocation bounded.
	if n > uint32(limit) || uint64(n)*4 > uint64(len(d.p)) {
		d.err = fmt.Errorf("%w: %d %s entries", ErrFrame, n, what)
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		s := d.string(what)
		if d.err != nil {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// SelectedEnv reports whether an environment variable travels with a
// request: the terminal, the locale, the time zone and den's own
// (DEN_*). den-hostcmd sends only these and den keeps only these.
func SelectedEnv(k string) bool {
	switch k {
	case "TERM", "LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "NO_COLOR":
		return true
	}
	return strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "DEN_")
}
