package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dialTimeout bounds a connection den makes for the computer.
const dialTimeout = 30 * time.Second

// dialer makes den's connections out, from den's own network
// namespace, to names (never an address the computer chose for a
// name), and never to an address the computer must not reach: the
// host's loopback and own addresses, link-local addresses (a cloud's
// metadata service among them), multicast and unspecified ones. A name
// in hosts is the user's explicit choice and goes where it says.
type dialer struct {
	hosts    map[string]string
	resolver *net.Resolver

	mu      sync.Mutex
	own     map[netip.Addr]bool // the host's addresses
	ownTime time.Time
}

// dial connects to host (a name or an address) on port and returns the
// connection and the address it reached.
func (d *dialer) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	guard := d.guard
	if pinned, ok := d.pin(host, port); ok {
		addr, guard = pinned, nil
		if _, _, err := net.SplitHostPort(pinned); err != nil {
			addr = net.JoinHostPort(pinned, strconv.Itoa(port))
		}
	}
	nd := &net.Dialer{Timeout: dialTimeout, Resolver: d.resolver, KeepAlive: 30 * time.Second}
	if guard != nil {
		nd.ControlContext = func(_ context.Context, network, address string, _ syscall.RawConn) error {
			return guard(address)
		}
	}
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// exists reports whether name has an address (or Options.Hosts pins
// it); err is a failure to find out.
func (d *dialer) exists(ctx context.Context, name string) (bool, error) {
	name = canonical(name)
	for k := range d.hosts {
		if k == name || strings.HasPrefix(k, name+":") {
			return true, nil
		}
	}
	r := d.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	_, err := r.LookupNetIP(ctx, "ip", name)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return false, nil
	}
	return false, err
}

// pin is where Options.Hosts sends host on port: a "name:port" entry
// first, then a "name" one.
func (d *dialer) pin(host string, port int) (string, bool) {
	if a, ok := d.hosts[hostPort(canonical(host), port)]; ok {
		return a, true
	}
	a, ok := d.hosts[canonical(host)]
	return a, ok
}

// guard refuses an address the computer must not reach; it runs just
// before each connect, on the address connected to.
func (d *dialer) guard(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: %s: %w", address, err)
	}
	a := ap.Addr().Unmap()
	switch {
	case a.IsLoopback(), a.IsUnspecified(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(),
		a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return fmt.Errorf("egress: %s is not an address den connects computers to", a)
	case d.isOwn(a):
		return fmt.Errorf("egress: %s is the host's own address, which computers do not reach", a)
	}
	return nil
}

// isOwn reports whether a is one of the host's addresses (read again at
// most once a second).
func (d *dialer) isOwn(a netip.Addr) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.own == nil || time.Since(d.ownTime) > time.Second {
		d.own = map[netip.Addr]bool{}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, ad := range addrs {
				if p, err := netip.ParsePrefix(ad.String()); err == nil {
					d.own[p.Addr().Unmap()] = true
				}
			}
		}
		d.ownTime = time.Now()
	}
	return d.own[a]
}
