package egress

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/secret"
)

// How long den waits for a connection's first bytes to learn its name:
// briefly when its address already names it and the port is not
// HTTP's (a protocol where the server speaks first sends nothing),
// longer when the address is all den has.
const (
	waitNamed   = 500 * time.Millisecond
	waitUnnamed = 5 * time.Second
	waitHello   = 10 * time.Second
)

// Options configure a Proxy.
type Options struct {
	// Hosts pins names ("name", or "name:port" for one port) to
	// addresses ("host" or "host:port"), ahead of DNS: den connects
	// there for them, even to an address it would
	// otherwise refuse (the host's loopback: a development server the
	// user chose to show the computer).
	Hosts map[string]string
	// Resolver resolves the names den connects to; nil is the host's.
	Resolver *net.Resolver
	// RootCAs verify the hosts den itself speaks TLS to (those a secret
	// is bound to); nil is the host's roots.
	RootCAs *x509.CertPool
}

// Proxy is den's egress: it serves computers' networks (Net), one
// policy each, and makes their connections out from den's own network
// namespace. It is safe for concurrent use and holds nothing per
// computer.
type Proxy struct {
	d         *dialer
	transport *http.Transport // to hosts with secrets
}

// New returns a proxy.
func New(o Options) *Proxy {
	hosts := map[string]string{}
	for k, v := range o.Hosts {
		hosts[canonical(k)] = v
	}
	p := &Proxy{d: &dialer{hosts: hosts, resolver: o.Resolver}}
	p.transport = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				return nil, err
			}
			return p.d.dial(ctx, host, n)
		},
		TLSClientConfig:     &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 30 * time.Second,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
	}
	return p
}

// Scope is what one computer's network is served with.
type Scope struct {
	Agent   string
	Session string // the computer's session (its name or id)
	Policy  Policy
	// Current, when set, is the policy as it is now (the user changed
	// the config), read for each connection and DNS query; Policy is
	// then only the policy the computer started with. A computer that
	// started with the network off gets none later.
	Current func() Policy
	// Record receives each connection once it ends, a denied one at
	// once. It must not block long. nil drops them.
	Record func(Record)
	// Ask asks a person whether the computer may connect to host, for
	// the Ask mode; by says who decided ("user", "session", "rule",
	// "timeout", ...). nil denies, as when nobody could answer.
	Ask func(ctx context.Context, host string, port int) (allowed bool, by string, err error)
	// CA is the computer's certificate authority, which it trusts: den
	// ends TLS with it towards hosts a secret is bound to, and to say
	// why it refused a TLS connection. nil: den never ends TLS.
	CA *CA
	// Secrets returns the secrets the computer's agent may use, read
	// at each connection to a host; nil: none.
	Secrets func() []secret.Secret
}

// Record is one connection of a computer, as den logs it and as the
// "egress" event carries it.
type Record struct {
	Time     time.Time     `json:"-"`
	Agent    string        `json:"agent"`
	Session  string        `json:"session,omitempty"`
	Host     string        `json:"host"` // the name (or address) the computer asked for
	Port     int           `json:"port"`
	Protocol string        `json:"protocol"`          // tls, http or tcp
	Allowed  bool          `json:"allowed"`           // the policy let it out
	By       string        `json:"by"`                // what decided: policy, rule, session, user, ...
	Mode     Mode          `json:"mode"`              // the policy's mode
	Via      string        `json:"via,omitempty"`     // whose policy or rule, when not the agent's: mcp:NAME, skill:NAME
	Addr     string        `json:"addr,omitempty"`    // where den connected
	Error    string        `json:"error,omitempty"`   // why it failed, allowed or not
	Secrets  bool          `json:"secrets,omitempty"` // den put a secret's value into a request
	Out      int64         `json:"bytes_out"`         // bytes from the computer
	In       int64         `json:"bytes_in"`          // bytes to the computer
	Duration time.Duration `json:"-"`
}

// Net is one computer's network as den serves it: the sandbox.Egress
// of one sandbox start.
type Net struct {
	p     *Proxy
	s     Scope
	names *names

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	asks   map[string]*asking // asks in flight, by host:port
}

var _ sandbox.Egress = (*Net)(nil)

// Net returns the network of one computer, served with s. A policy
// without a mode is Open, den's default.
func (p *Proxy) Net(s Scope) *Net {
	if s.Policy.Mode == "" {
		s.Policy.Mode = Open
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Net{p: p, s: s, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}, asks: map[string]*asking{}}
	n.names = newNames(func(ctx context.Context, name string) (bool, error) {
		if !n.policy().Reaches(name) {
			return true, nil // never looked up: the name could carry data out
		}
		return p.d.exists(ctx, name)
	})
	return n
}

// policy is the policy now.
func (n *Net) policy() Policy {
	if n.s.Current == nil {
		return n.s.Policy
	}
	p := n.s.Current()
	if p.Mode == "" {
		p.Mode = Open
	}
	return p
}

// Open reports whether the policy is Open.
func (n *Net) Open() bool { return n.s.Policy.Mode == Open }

// Serve serves the computer's connections and DNS queries until stop.
func (n *Net) Serve(tcp []net.Listener, dns net.PacketConn) (stop func()) {
	for _, l := range tcp {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.accept(l)
		}()
	}
	if dns != nil {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.names.serveDNS(dns)
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			n.cancel()
			for _, l := range tcp {
				l.Close()
			}
			if dns != nil {
				dns.Close()
			}
			n.mu.Lock()
			n.closed = true
			for c := range n.conns {
				c.Close()
			}
			n.mu.Unlock()
			n.wg.Wait()
		})
	}
}

func (n *Net) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !n.track(c) {
			c.Close()
			return
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			defer n.untrack(c)
			n.handle(c)
		}()
	}
}

// track adds c to the connections stop closes; false once stopped.
func (n *Net) track(c net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

func (n *Net) untrack(c net.Conn) {
	c.Close()
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// handle serves one connection of the computer: where it was going,
// which name it is for, whether the policy lets it out; then den
// connects to that name and relays both ways.
func (n *Net) handle(c net.Conn) {
	start := time.Now()
	dst, err := netns.OriginalDst(c)
	if err != nil || dst.String() == c.LocalAddr().String() {
		return // not redirected: the computer dialed den's listener itself
	}
	if dst.Port() == 53 {
		n.names.serveDNSTCP(c)
		return
	}
	pol := n.policy()
	rec := Record{Time: start, Agent: n.s.Agent, Session: n.s.Session, Port: int(dst.Port()), Mode: pol.Mode}
	recorded := false
	record := func() {
		if !recorded && n.s.Record != nil {
			rec.Duration = time.Since(start)
			n.s.Record(rec)
		}
		recorded = true
	}
	defer record()
	named, fromDNS := n.names.name(dst.Addr())
	wait := waitUnnamed
	if fromDNS && dst.Port() != 80 && dst.Port() != 443 && len(n.bound(named)) == 0 {
		// A name den gave, on a port where the server may speak
		// first. (On HTTP's ports, and towards a host with secrets,
		// den waits for the client however busy the machine is.)
		wait = waitNamed
	}
	h := sniff(c, wait, waitHello)
	rec.Protocol = h.proto
	rec.Host = n.host(h.name, named, dst.Addr())
	if rec.Host == "" {
		rec.Host, rec.By, rec.Error = dst.Addr().String(), "address", "an address in den's own range that den did not give for a name"
		record() // before the computer sees the refusal
		n.refuse(c, h, rec)
		return
	}
	rec.Allowed, rec.By, rec.Via = n.decide(pol, rec.Host, rec.Port)
	if !rec.Allowed {
		record()
		n.refuse(c, h, rec)
		return
	}
	if h.proto == ProtoTLS && n.s.CA != nil {
		if bound := n.bound(rec.Host); len(bound) > 0 {
			n.intercept(c, h, &rec, bound)
			return
		}
	}
	up, err := n.p.d.dial(n.ctx, rec.Host, rec.Port)
	if err != nil {
		rec.Error = err.Error()
		if h.proto == ProtoHTTP {
			reply(c, 502, fmt.Sprintf("den: could not connect to %s for you: %v\n", hostPort(rec.Host, rec.Port), err))
		}
		return
	}
	defer up.Close()
	rec.Addr = up.RemoteAddr().String()
	if len(h.head) > 0 {
		if _, err := up.Write(h.head); err != nil {
			rec.Error = err.Error()
			return
		}
	}
	rec.Out, rec.In = pipe(c, up)
	rec.Out += int64(len(h.head))
}

// host is the name a connection is for: the one the client sent (TLS's
// server name, HTTP's Host), else the one den's DNS gave its address
// for, else the address itself; "" for an address in den's range that
// den did not give.
func (n *Net) host(sent, named string, a netip.Addr) string {
	if sent != "" {
		if sa, err := netip.ParseAddr(sent); err == nil && inPool(sa) {
			name, ok := n.names.name(sa)
			if !ok {
				return ""
			}
			return name
		}
		return sent
	}
	if named != "" {
		return named
	}
	if inPool(a) {
		return ""
	}
	return a.Unmap().String()
}

func inPool(a netip.Addr) bool {
	return netip.PrefixFrom(netip.AddrFrom4(poolBase), 15).Contains(a.Unmap())
}

// decide applies the policy, asking a person in the Ask mode (one ask
// per host and port at a time: connections that wait on the same one
// share its answer). via is whose policy or rule decided (Record.Via).
func (n *Net) decide(pol Policy, host string, port int) (ok bool, by, via string) {
	d, rule := pol.Match(host, port)
	via = cmp.Or(rule.From, pol.Of)
	switch d {
	case Allow:
		return true, "policy", via
	case Deny:
		return false, "policy", via
	}
	ok, by = n.ask(host, port)
	return ok, by, via
}

// ask asks a person about a connection, for the Ask mode.
func (n *Net) ask(host string, port int) (bool, string) {
	if n.s.Ask == nil {
		return false, "unattended"
	}
	key := hostPort(host, port)
	n.mu.Lock()
	a, waiting := n.asks[key]
	if !waiting {
		a = &asking{done: make(chan struct{})}
		n.asks[key] = a
	}
	n.mu.Unlock()
	if !waiting {
		ok, by, err := n.s.Ask(n.ctx, host, port)
		if err != nil {
			ok, by = false, "error"
			if n.ctx.Err() != nil {
				by = "canceled"
			}
		}
		a.ok, a.by = ok, by
		n.mu.Lock()
		delete(n.asks, key)
		n.mu.Unlock()
		close(a.done)
	}
	select {
	case <-a.done:
		return a.ok, a.by
	case <-n.ctx.Done():
		return false, "canceled"
	}
}

type asking struct {
	done chan struct{}
	ok   bool
	by   string
}

// refuse ends a denied connection, telling an HTTP client why in words
// the model can act on.
func (n *Net) refuse(c net.Conn, h hello, rec Record) {
	switch {
	case h.proto == ProtoHTTP:
		reply(c, 403, Denied(rec)+"\n")
	case h.proto == ProtoTLS && h.name != "" && n.s.CA != nil:
		n.denyPage(c, h, rec)
	}
}

// reply writes a whole HTTP response with a plain-text body and ends
// the exchange.
func reply(c net.Conn, code int, body string) {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Den-Egress: denied\r\n\r\n%s",
		code, httpStatus(code), len(body), body)
}

func httpStatus(code int) string {
	if code == 403 {
		return "Forbidden"
	}
	return "Bad Gateway"
}

// Denied says why a connection was refused and how the user can allow
// it: for the model (in the HTTP reply and the command's result) and
// for the person reading den's log.
func Denied(r Record) string {
	hp := hostPort(r.Host, r.Port)
	how := fmt.Sprintf("den network allow --agent %s %s", r.Agent, r.Host)
	whose := "agent " + r.Agent
	server, isServer := strings.CutPrefix(r.Via, "mcp:")
	if isServer {
		how = fmt.Sprintf("den network allow --mcp %s %s", server, r.Host)
		whose = "MCP server " + server
	}
	switch r.By {
	case "address":
		return fmt.Sprintf("den: the connection to %s was refused: %s. Connect to a name instead.", hp, r.Error)
	case "policy":
		switch {
		case r.Mode == Off && isServer:
			return fmt.Sprintf("den: the connection to %s was refused: MCP server %s has no network (\"egress\": \"off\" in mcp.json). The user can change that in mcp.json.", hp, server)
		case r.Mode == Off:
			return fmt.Sprintf("den: the connection to %s was refused: agent %s has no network (egress = \"off\"). The user can turn it on in den's config ([agents.%s] egress).", hp, r.Agent, r.Agent)
		}
		return fmt.Sprintf("den: the connection to %s was refused by %s's egress policy (%s). The user can allow it with: %s", hp, whose, r.Mode, how)
	case "unattended":
		return fmt.Sprintf("den: the connection to %s needs the user's approval (egress = \"ask\"), and nobody could be asked. The user can allow it with: %s", hp, how)
	case "timeout":
		return fmt.Sprintf("den: the connection to %s was refused: nobody answered the approval in time. The user can allow it with: %s", hp, how)
	case "error", "canceled":
		return fmt.Sprintf("den: the connection to %s was refused: den could not ask the user (%s).", hp, r.By)
	}
	// A person's answer: now, earlier in the session, or always.
	return fmt.Sprintf("den: the connection to %s was refused: the user denied it. Ask the user before trying again.", hp)
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// pipe relays between the computer's connection and den's, both ways,
// until both directions end, and returns the bytes each way. Between
// two TCP sockets the kernel moves the bytes (splice).
func pipe(c, up net.Conn) (out, in int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in, _ = io.Copy(c, up)
		closeWrite(c)
	}()
	out, _ = io.Copy(up, c)
	closeWrite(up)
	wg.Wait()
	return out, in
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
