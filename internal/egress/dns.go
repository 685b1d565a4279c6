package egress

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// The computer's names resolve to addresses of its own, one per name,
// from the benchmarking range 198.18.0.0/15, which no real host uses:
// an address tells den which name a connection is for, den never asks
// the world about a name the computer may not reach (a name is data:
// asking about it would send it out), and the computer cannot choose
// where den connects by choosing an address.
const (
	poolSize = 1 << 16 // names remembered per computer; the oldest go first
	ttl      = 60      // seconds
)

var poolBase = netip.MustParseAddr("198.18.0.0").As4()

// names maps the computer's names to their addresses and back.
type names struct {
	// exists says whether a name exists, for a name the policy lets
	// the computer reach (den would look it up to connect anyway):
	// the computer then learns of a name that does not exist as it
	// would without den. Other names are never looked up.
	exists func(ctx context.Context, name string) (ok bool, err error)

	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   uint32
	known  map[string]lookup // results of exists, for a while
}

type lookup struct {
	ok   bool
	when time.Time
}

// lookupFor is how long den keeps what exists said.
const lookupFor = 30 * time.Second

func newNames(exists func(ctx context.Context, name string) (bool, error)) *names {
	return &names{exists: exists, byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}, known: map[string]lookup{}}
}

// check is exists, remembered for lookupFor; err is a failure to find
// out (the resolver failed), not an answer.
func (n *names) check(name string) (bool, error) {
	if n.exists == nil {
		return true, nil
	}
	n.mu.Lock()
	l, ok := n.known[name]
	n.mu.Unlock()
	if ok && time.Since(l.when) < lookupFor {
		return l.ok, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	found, err := n.exists(ctx, name)
	if err != nil {
		return false, err
	}
	n.mu.Lock()
	if len(n.known) > poolSize {
		clear(n.known)
	}
	n.known[name] = lookup{found, time.Now()}
	n.mu.Unlock()
	return found, nil
}

// addr is name's address, given now if name has none.
func (n *names) addr(name string) netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a
	}
	i := n.next%poolSize + 1 // never the range's .0
	n.next++
	b := poolBase
	v := binary.BigEndian.Uint32(b[:]) + i
	binary.BigEndian.PutUint32(b[:], v)
	a := netip.AddrFrom4(b)
	if old, ok := n.byAddr[a]; ok {
		delete(n.byName, old)
	}
	n.byName[name], n.byAddr[a] = a, name
	return a
}

// name is the name den gave a, if it did.
func (n *names) name(a netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.byAddr[a.Unmap()]
	return s, ok
}

// answer answers one DNS query from the computer; nil when the query
// cannot be parsed at all (it is dropped, as a server would).
func (n *names) answer(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 || h.OpCode != 0 {
		rh.RCode = dnsmessage.RCodeFormatError
		if h.OpCode != 0 {
			rh.RCode = dnsmessage.RCodeNotImplemented
		}
		return build(rh, qs, nil)
	}
	question := qs[0]
	name := canonical(question.Name.String())
	switch {
	case question.Class != dnsmessage.ClassINET:
		rh.RCode = dnsmessage.RCodeRefused
	case !validName(name) || !strings.Contains(name, "."):
		// A single label ("den", a search-list probe) or no name at
		// all: nobody outside could answer it.
		rh.RCode = dnsmessage.RCodeNameError
	case question.Type != dnsmessage.TypeA && question.Type != dnsmessage.TypeAAAA:
		// Nothing but addresses (MX, TXT, SRV, PTR): an empty answer.
		rh.Authoritative = true
	default:
		found, err := n.check(name)
		switch {
		case err != nil:
			rh.RCode = dnsmessage.RCodeServerFailure
		case !found:
			rh.RCode = dnsmessage.RCodeNameError
		case question.Type == dnsmessage.TypeAAAA:
			// The computer's names have IPv4 addresses only: an empty
			// answer, so that clients use the A record.
			rh.Authoritative = true
		default:
			rh.Authoritative = true
			return build(rh, qs, func(b *dnsmessage.Builder) error {
				return b.AResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: ttl},
					dnsmessage.AResource{A: n.addr(name).As4()})
			})
		}
	}
	return build(rh, qs, nil)
}

func build(h dnsmessage.Header, qs []dnsmessage.Question, answers func(*dnsmessage.Builder) error) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil
	}
	for _, q := range qs {
		if err := b.Question(q); err != nil {
			return nil
		}
	}
	if answers != nil {
		if err := b.StartAnswers(); err != nil {
			return nil
		}
		if err := answers(&b); err != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// maxQueries bounds the queries den answers at once for one computer;
// more wait (a query may wait for den's own lookup).
const maxQueries = 64

// serveDNS answers the queries pc receives until it is closed, and
// returns once every answer is written.
func (n *names) serveDNS(pc net.PacketConn) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxQueries)
	for {
		buf := make([]byte, 1500)
		k, from, err := pc.ReadFrom(buf)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if out := n.answer(buf[:k]); out != nil {
				pc.WriteTo(out, from)
			}
		}()
	}
}

// serveDNSTCP answers DNS over TCP (each message behind its length) on
// c until the computer closes it.
func (n *names) serveDNSTCP(c net.Conn) (in, out int64) {
	var l [2]byte
	for {
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		in += int64(len(q)) + 2
		a := n.answer(q)
		if a == nil {
			return
		}
		msg := binary.BigEndian.AppendUint16(nil, uint16(len(a)))
		if _, err := c.Write(append(msg, a...)); err != nil {
			return
		}
		out += int64(len(a)) + 2
	}
}
