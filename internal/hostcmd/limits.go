package hostcmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"den.dev/den/internal/hostcmd/wire"
)

// Limits bound what one session's computer can make den spend through
// its socket. The computer is not trusted: without them, a few hundred
// connections streaming stdin cost den gigabytes. A field of zero (or
// less) takes its default.
type Limits struct {
	// MaxConcurrent is how many calls of the session den serves at
	// once, each counted from its connection until den has sent its
	// exit status; a connection that has not sent its request yet
	// counts too. Default 16.
	MaxConcurrent int
	// MaxBufferedBytes bounds the stdin den holds ahead of the
	// handlers, summed over the session's calls (each call has a
	// window of 256 KiB within it). Default 4 MiB; never less than a
	// frame (wire.MaxData).
	MaxBufferedBytes int64
	// CallsPerMinute is the sustained rate of calls, with bursts of a
	// tenth of it (at least 1). Default 600, bursts of 60.
	CallsPerMinute int
	// RequestTimeout bounds the wait for a connection's request frame.
	// Default RequestTimeout.
	RequestTimeout time.Duration
}

// Defaults of Limits.
const (
	defaultMaxConcurrent    = 16
	defaultMaxBufferedBytes = 4 << 20
	defaultCallsPerMinute   = 600
)

// refuseTimeout bounds how long den reads a refused call's request,
// for the command's name, before it answers.
const refuseTimeout = time.Second

// refusalLogEvery is how often refusals reach the log, per session.
const refusalLogEvery = time.Second

func (lim Limits) withDefaults() Limits {
	if lim.MaxConcurrent <= 0 {
		lim.MaxConcurrent = defaultMaxConcurrent
	}
	if lim.MaxBufferedBytes <= 0 {
		lim.MaxBufferedBytes = defaultMaxBufferedBytes
	}
	// One frame must always fit, or a call could wait for room that
	// never comes.
	lim.MaxBufferedBytes = max(lim.MaxBufferedBytes, wire.MaxData+chunkOverhead)
	if lim.CallsPerMinute <= 0 {
		lim.CallsPerMinute = defaultCallsPerMinute
	}
	if lim.RequestTimeout <= 0 {
		lim.RequestTimeout = RequestTimeout
	}
	return lim
}

// burst is how many calls may come at once: a tenth of a minute's.
func (lim Limits) burst() float64 { return float64(max(1, lim.CallsPerMinute/10)) }

// An Option configures a Broker.
type Option func(*Broker)

// WithLimits sets the limits of each of the broker's sessions.
func WithLimits(lim Limits) Option {
	return func(b *Broker) { b.limits = lim }
}

// admission is what a Listener counts to apply its Limits, guarded by
// Listener.mu.
type admission struct {
	running  int // calls holding a slot
	refusing int // refused calls whose request den is reading
	tokens   float64
	last     time.Time // of the last refill
	refused  int       // refusals not logged yet
	loggedAt time.Time // of the last refusal logged
}

// admit takes a slot and a token for a new connection, or says why the
// call is refused.
func (l *Listener) admit() (refusal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := &l.adm
	if a.running >= l.limits.MaxConcurrent {
		return fmt.Sprintf("too many host commands running at once in this session (%d); wait for some to finish", l.limits.MaxConcurrent)
	}
	// A token bucket: CallsPerMinute tokens a minute, a burst's worth
	// kept at most.
	now := l.b.now()
	if now.After(a.last) {
		a.tokens = min(l.limits.burst(), a.tokens+now.Sub(a.last).Minutes()*float64(l.limits.CallsPerMinute))
		a.last = now
	}
	if a.tokens < 1 {
		return fmt.Sprintf("more than %d host commands a minute in this session; slow down", l.limits.CallsPerMinute)
	}
	a.tokens--
	a.running++
	return ""
}

// leave gives back a slot taken by admit.
func (l *Listener) leave() {
	l.mu.Lock()
	l.adm.running--
	l.mu.Unlock()
}

// refuse answers a refused call: "<command>: den: <why>" on its stderr
// and exit status 1. The handler never runs and no stdin is read. den
// reads the request, though, for the command's name and because a
// client that cannot write its request sees a broken connection rather
// than the answer: up to MaxConcurrent refusals at a time do, each in
// a goroutine and for at most refuseTimeout; past that, den answers at
// once without reading (and such a client may miss the answer).
func (l *Listener) refuse(conn *net.UnixConn, why string) {
	l.mu.Lock()
	msg := l.noteRefusal(why)
	read := l.adm.refusing < l.limits.MaxConcurrent
	if read {
		l.adm.refusing++
	}
	l.mu.Unlock()
	if msg != "" {
		l.b.log(msg)
	}
	if !read {
		conn.SetDeadline(time.Now().Add(100 * time.Millisecond))
		conn.Write(refusal("", why))
		conn.Close()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() {
			l.mu.Lock()
			l.adm.refusing--
			l.mu.Unlock()
		}()
		defer conn.Close()
		stop := context.AfterFunc(l.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		conn.SetDeadline(time.Now().Add(min(refuseTimeout, l.limits.RequestTimeout)))
		conn.Write(refusal(requestName(conn), why))
	}()
}

// noteRefusal counts a refusal and returns the log line to write, at
// most one every refusalLogEvery.
func (l *Listener) noteRefusal(why string) string {
	a := &l.adm
	a.refused++
	now := l.b.now()
	if !a.loggedAt.IsZero() && now.Sub(a.loggedAt) < refusalLogEvery {
		return ""
	}
	msg := fmt.Sprintf("hostcmd: session %s: refused a call: %s", l.session.Session, why)
	if a.refused > 1 {
		msg = fmt.Sprintf("hostcmd: session %s: refused %d calls since the last report, the latest: %s", l.session.Session, a.refused, why)
	}
	a.refused, a.loggedAt = 0, now
	return msg
}

// refusal is the answer to a refused call.
func refusal(name, why string) []byte {
	msg := "den: " + why + "\n"
	if name != "" {
		msg = name + ": " + msg
	}
	b := wire.AppendFrame(nil, wire.TypeStderr, []byte(msg))
	return wire.AppendFrame(b, wire.TypeExit, wire.ExitPayload(ExitError))
}

// requestName reads a request frame and returns its command's name,
// or "" when it has none. It keeps the first 4 KiB of the payload and
// discards the rest.
func requestName(r io.Reader) string {
	var h [wire.HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil || h[0] != wire.TypeRequest {
		return ""
	}
	n := int64(binary.BigEndian.Uint32(h[1:]))
	if n > wire.MaxRequest {
		return ""
	}
	p := make([]byte, min(n, 4<<10))
	if _, err := io.ReadFull(r, p); err != nil {
		return ""
	}
	// The rest is read only so that the client sees the answer; the
	// name is known already, whether or not it all arrives in time.
	io.CopyN(io.Discard, r, n-int64(len(p)))
	return commandName(p)
}

// commandName returns the base name of argv[0] from the start of a
// request payload (see wire.AppendRequest), which may be cut anywhere
// after argv[0]; "" when p does not start with a whole, printable
// argv[0]. (It is not in package wire because any change there changes
// den-hostcmd's bytes.)
func commandName(p []byte) string {
	const head = len(wire.Magic) + 2 + 4 + 4 // magic, version, flags, argc, len(argv[0])
	if len(p) < head || !bytes.Equal(p[:4], wire.Magic[:]) || p[4] != wire.Version || binary.BigEndian.Uint32(p[6:]) == 0 {
		return ""
	}
	n := binary.BigEndian.Uint32(p[10:])
	if uint64(n) > uint64(len(p)-head) {
		return ""
	}
	s := string(p[head : head+int(n)])
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return ""
		}
	}
	return s
}
